/* SoC selection (env SWCANN_SOC): a family name or a full SoC name from
 * acl_abi.md 5.1.  family -> (SocVersion, NpuArch) per the op files' A.2 tables; the
 * families, their SoC versions and their default SoCs come from platforms/platform.yaml. */
#include "core.h"
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    const char *family;
    const char *dflt;
    int socv;
    int arch;
    const char *const *versions; /* NULL-terminated fnmatch patterns of its platform configs' SoC versions */
} fam_t;

/* generated from platforms/platform.yaml (swc_platform.h) */
static const fam_t k_fams[] = {SWC_FAMILY_ROWS};
#define NFAM (sizeof k_fams / sizeof k_fams[0])

/* resolved results live here: one slot per family plus one for a full name */
static swc_soc_info g_slots[NFAM];
static char g_full_name[64];
static swc_soc_info g_full;
static const swc_soc_info *g_cur;
static int g_loaded;

static int is_version_of(const fam_t *f, const char *v)
{
    for (const char *const *p = f->versions; *p; p++)
        if (fnmatch(*p, v, 0) == 0) return 1;
    return 0;
}

const swc_soc_info *soc_resolve(const char *v)
{
    if (!v || !*v) v = SWC_DEFAULT_FAMILY;
    /* Family names are lower case and compared exactly: a case-insensitive match
     * would read the SoC name "Ascend910B" (old Atlas training part) as the
     * family "ascend910b" (Atlas A2). */
    for (size_t i = 0; i < NFAM; i++) {
        if (strcmp(v, k_fams[i].family) == 0) {
            g_slots[i] = (swc_soc_info){k_fams[i].family, k_fams[i].dflt, k_fams[i].socv,
                                        k_fams[i].arch};
            return &g_slots[i];
        }
    }
    if (strlen(v) >= sizeof g_full_name) return NULL;
    for (size_t i = 0; i < NFAM; i++) {
        if (is_version_of(&k_fams[i], v)) {
            snprintf(g_full_name, sizeof g_full_name, "%s", v);
            g_full = (swc_soc_info){k_fams[i].family, g_full_name, k_fams[i].socv, k_fams[i].arch};
            return &g_full;
        }
    }
    return NULL;
}

const char *soc_allowed_text(void) { return SWC_SOC_ALLOWED_TEXT; }

/* caller holds g_lock */
const swc_soc_info *soc_reload(void)
{
    g_cur = soc_resolve(getenv("SWCANN_SOC"));
    g_loaded = 1;
    return g_cur;
}

const swc_soc_info *soc_current(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_loaded) soc_reload();
    const swc_soc_info *r = g_cur;
    pthread_mutex_unlock(&g_lock);
    return r;
}
