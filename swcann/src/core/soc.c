/* SoC selection (env SWCANN_SOC): a family name or a full SoC name from
 * acl_abi.md 5.1.  family -> (SocVersion, NpuArch) per the op files' A.2 tables. */
#include "core.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct { const char *family; const char *dflt; int socv; int arch; const char *names; } fam_t;

/* names: '|'-separated full names (acl_abi.md 5.1 ini table); the first is the default */
static const fam_t k_fams[] = {
    {"ascend910b", "Ascend910B2", SOCV_ASCEND910B, DAV_2201,
     "|Ascend910B1|Ascend910B2|Ascend910B2C|Ascend910B3|Ascend910B4|Ascend910B4-1|"},
    {"ascend910_93", "Ascend910_9391", SOCV_ASCEND910_93, DAV_2201,
     "|Ascend910_9381|Ascend910_9382|Ascend910_9391|Ascend910_9392|Ascend910_9362|"
     "Ascend910_9363|Ascend910_9372|"},
    {"ascend950", "Ascend950PR_9579", SOCV_ASCEND950, DAV_3510, NULL /* prefix rule */},
    {"ascend910", "Ascend910A", SOCV_ASCEND910, DAV_1001,
     "|Ascend910A|Ascend910ProA|Ascend910PremiumA|Ascend910B|Ascend910ProB|"},
    {"ascend310p", "Ascend310P3", SOCV_ASCEND310P, DAV_2002,
     "|Ascend310P1|Ascend310P3|Ascend310P5|Ascend310P7|"},
    {"ascend310b", "Ascend310B1", SOCV_ASCEND310B, DAV_3002,
     "|Ascend310B1|Ascend310B2|Ascend310B3|Ascend310B4|"},
};
#define NFAM (sizeof k_fams / sizeof k_fams[0])

/* resolved results live here: one slot per family plus one for a full name */
static swc_soc_info g_slots[NFAM];
static char g_full_name[64];
static swc_soc_info g_full;
static const swc_soc_info *g_cur;
static int g_loaded;

static int is_950_name(const char *v)
{
    /* Ascend950PR_xxxx / Ascend950DT_xxxx (cann-dev ini files, 4 alnum chars), or the earlier
     * name of the family, Ascend910_95xx (acl_abi.md 1.8) */
    const char *s;
    size_t want;
    if (strncmp(v, "Ascend950PR_", 12) == 0 || strncmp(v, "Ascend950DT_", 12) == 0) {
        s = v + 12;
        want = 4;
    } else if (strncmp(v, "Ascend910_95", 12) == 0) {
        s = v + 12;
        want = 2;
    } else {
        return 0;
    }
    size_t n = strlen(s);
    if (n != want) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i])) return 0;
    return 1;
}

const swc_soc_info *soc_resolve(const char *v)
{
    if (!v || !*v) v = "ascend910b"; /* default family */
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
        int hit;
        if (k_fams[i].names) {
            char pat[80];
            snprintf(pat, sizeof pat, "|%s|", v);
            hit = strstr(k_fams[i].names, pat) != NULL;
        } else {
            hit = is_950_name(v);
        }
        if (hit) {
            snprintf(g_full_name, sizeof g_full_name, "%s", v);
            g_full = (swc_soc_info){k_fams[i].family, g_full_name, k_fams[i].socv, k_fams[i].arch};
            return &g_full;
        }
    }
    return NULL;
}

const char *soc_allowed_text(void)
{
    return "ascend910b, ascend910_93, ascend950, ascend910, ascend310p, ascend310b, or a full "
           "SoC name such as Ascend910B3, Ascend910_9392, Ascend950PR_9579, Ascend910A, "
           "Ascend310P3, Ascend310B1";
}

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
