/* libascend_hal.so stand-in: the driver's device enumeration.
 * On a machine this library belongs to the driver package
 * (/usr/local/Ascend/driver/lib64/driver), not to CANN, and CANN's runtime
 * reaches it only through LD_LIBRARY_PATH (acl_abi.md 1.8).  The software CANN
 * installs it the same way, in <root>/driver/lib64/driver, so that loading the
 * runtime without set_env.sh fails exactly like a real install. */
#include <stdint.h>
#include <stdlib.h>

#define HAL_API __attribute__((visibility("default")))
#define HAL_MAX_DEVICES 64
enum { DRV_ERROR_NONE = 0, DRV_ERROR_INVALID_VALUE = 1 };

/* number of physical devices: SWCANN_DEVICE_COUNT (default 1), in [1, 64] */
HAL_API int drvGetDevNum(uint32_t *num_dev)
{
    if (!num_dev) return DRV_ERROR_INVALID_VALUE;
    const char *e = getenv("SWCANN_DEVICE_COUNT");
    long n = 1;
    if (e && *e) {
        char *end;
        n = strtol(e, &end, 10);
        if (*end || n < 1 || n > HAL_MAX_DEVICES) return DRV_ERROR_INVALID_VALUE;
    }
    *num_dev = (uint32_t)n;
    return DRV_ERROR_NONE;
}
