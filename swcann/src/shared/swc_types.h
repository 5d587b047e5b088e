/* The C side's one table of aclDataType and aclFormat names (spec acl_abi.md 3.1, 3.2).
 * Every dtype/format name, element size and "private format" flag the libraries use
 * comes from here: the dtype rows are generated from platforms/platform.yaml, and
 * tests/test_swcann.py checks the format rows against harness.core.formats.  Header-only (static inline) because libascendcl, libnnopbase and
 * libopapi all need it and none exports internals to the others. */
#ifndef SWC_TYPES_H_
#define SWC_TYPES_H_
#include <stddef.h>
#include "acl/acl.h"
#include "swc_platform.h"

typedef struct {
    int value;        /* aclDataType (first member: swc_find_row) */
    const char *name; /* GE name: aclnn messages print these (acl_abi.md 3.1 note) */
    size_t size;      /* bytes per element; 1 for sub-byte types, 0 when not a tensor dtype */
} swc_dtype_row;

typedef struct {
    int value;        /* aclFormat (first member: swc_find_row) */
    const char *name; /* without the ACL_FORMAT_ prefix, as case files and messages spell it */
    int is_private;   /* opbase op::IsPrivateFormat (MaxPool2d spec #14) */
} swc_format_row;

static inline const swc_dtype_row *swc_dtype_table(int *n)
{
    static const swc_dtype_row rows[] = {
        SWC_DTYPE_ROWS /* generated from platforms/platform.yaml (swc_platform.h) */
    };
    *n = (int)(sizeof rows / sizeof rows[0]);
    return rows;
}

static inline const swc_format_row *swc_format_table(int *n)
{
    static const swc_format_row rows[] = {
#define SWC_F(name, private_) {ACL_FORMAT_##name, #name, private_} /* name spelled once */
        SWC_F(UNDEFINED, 0), SWC_F(NCHW, 0), SWC_F(NHWC, 0), SWC_F(ND, 0),
        SWC_F(NC1HWC0, 1), SWC_F(FRACTAL_Z, 1), SWC_F(NC1HWC0_C04, 1), SWC_F(HWCN, 0),
        SWC_F(NDHWC, 0), SWC_F(FRACTAL_NZ, 1), SWC_F(NCDHW, 0), SWC_F(NDC1HWC0, 1),
        {ACL_FRACTAL_Z_3D, "FRACTAL_Z_3D", 1}, /* this enum name lacks FORMAT_ (acl_abi.md 3.2) */
        SWC_F(NC, 0), SWC_F(NCL, 0), SWC_F(FRACTAL_NZ_C0_16, 1), SWC_F(FRACTAL_NZ_C0_32, 1),
        SWC_F(FRACTAL_NZ_C0_2, 1), SWC_F(FRACTAL_NZ_C0_4, 1), SWC_F(FRACTAL_NZ_C0_8, 1),
#undef SWC_F
    };
    *n = (int)(sizeof rows / sizeof rows[0]);
    return rows;
}

/* Both row types start with their enum value, so one search serves both tables (a
 * pointer to a struct may be read as a pointer to its first member). */
static inline const void *swc_find_row(const void *rows, int n, size_t row_size, int value)
{
    for (int i = 0; i < n; i++) {
        const void *r = (const char *)rows + (size_t)i * row_size;
        if (*(const int *)r == value) return r;
    }
    return NULL;
}

/* the row of a dtype / format, or NULL when the value is not one */
static inline const swc_dtype_row *swc_dtype(int dt)
{
    int n;
    const swc_dtype_row *rows = swc_dtype_table(&n);
    return (const swc_dtype_row *)swc_find_row(rows, n, sizeof *rows, dt);
}
static inline const swc_format_row *swc_format(int f)
{
    int n;
    const swc_format_row *rows = swc_format_table(&n);
    return (const swc_format_row *)swc_find_row(rows, n, sizeof *rows, f);
}

static inline size_t swc_dtype_size(int dt) { return swc_dtype(dt) ? swc_dtype(dt)->size : 0; }
static inline const char *swc_dtype_name(int dt)
{
    return swc_dtype(dt) ? swc_dtype(dt)->name : "DT_UNKNOWN";
}
static inline const char *swc_format_name(int f)
{
    return swc_format(f) ? swc_format(f)->name : "UNKNOWN";
}
static inline int swc_format_is_private(int f) { return swc_format(f) && swc_format(f)->is_private; }
#endif
