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

/* a device count in [1, 64] from `e`, or 0 when e is not one */
static long count_of(const char *e)
{
    char *end;
    long n = strtol(e, &end, 10);
    return (*end || end == e || n < 1 || n > HAL_MAX_DEVICES) ? 0 : n;
}

/* number of physical devices: SWCANN_DEVICES (default 1), in [1, 64]. SWCANN_DEVICE_COUNT is
 * its old name: accepted alone, or beside SWCANN_DEVICES when both say the same. */
HAL_API int drvGetDevNum(uint32_t *num_dev)
{
    if (!num_dev) return DRV_ERROR_INVALID_VALUE;
    const char *now = getenv("SWCANN_DEVICES"), *old = getenv("SWCANN_DEVICE_COUNT");
    long a = now && *now ? count_of(now) : -1, b = old && *old ? count_of(old) : -1;
    if (a == 0 || b == 0 || (a > 0 && b > 0 && a != b)) return DRV_ERROR_INVALID_VALUE;
    *num_dev = (uint32_t)(a > 0 ? a : b > 0 ? b : 1);
    return DRV_ERROR_NONE;
}
