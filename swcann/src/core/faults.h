/* Run-level faults injected through SWCANN_FAULTS (grammar in swcann/README.md).
 * Parsed at aclInit; the hooks below are the only places the faults act. */
#ifndef SWC_FAULTS_H_
#define SWC_FAULTS_H_
#include <stddef.h>
#include <stdint.h>

int faults_load(char *why, size_t n);  /* 0, or -1 with why filled (bad SWCANN_FAULTS) */
/* 1 when fault `name` is configured and its triggers match this launch */
int faults_on(const char *name, const char *api, int64_t numel);
/* phase 2 of `api` on `stream` with a gradOutput of `numel` elements (-1: none).
 * May not return (segfault, hang). Returns 1 when the kernel must not run. */
int faults_phase2(const char *api, int64_t numel, void *stream);
/* the error state of a device (sync_507015): what every sync on it returns, 0 when none */
int faults_device_error(int dev);
/* 1 when a sync of `stream` would never return (sync_hang armed on it) */
int faults_sync_hangs(void *stream);
/* stream sync on `stream` of device `dev`: may hang; returns an error code or 0 */
int faults_sync(void *stream, int dev);
void faults_device_reset(int dev); /* the device's error state goes away */
#endif
