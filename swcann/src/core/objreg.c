/* Registry of live ACL objects (tensors, arrays, scalars, executors): destroy and
 * use validate handles against it, so a double destroy or a stale pointer is an
 * error status with a message instead of a crash.  Open addressing + tombstones. */
#include "core.h"
#include <stdlib.h>

typedef struct { uintptr_t key; int kind; } slot_t; /* key 0 empty, 1 tombstone */
static slot_t *g_tab;
static size_t g_cap, g_used, g_live;

static size_t hash_ptr(uintptr_t k) { return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull); }

static void rehash(size_t ncap)
{
    slot_t *old = g_tab, *nt = calloc(ncap, sizeof *nt);
    size_t ocap = g_cap;
    if (!nt) return; /* keep the old table */
    g_tab = nt;
    g_cap = ncap;
    g_used = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].key > 1) {
            size_t j = hash_ptr(old[i].key) & (g_cap - 1);
            while (g_tab[j].key) j = (j + 1) & (g_cap - 1);
            g_tab[j] = old[i];
            g_used++;
        }
    }
    free(old);
}

static slot_t *find(uintptr_t k)
{
    if (!g_cap) return NULL;
    size_t j = hash_ptr(k) & (g_cap - 1);
    while (g_tab[j].key) {
        if (g_tab[j].key == k) return &g_tab[j];
        j = (j + 1) & (g_cap - 1);
    }
    return NULL;
}

int objreg_add(const void *p, int kind)
{
    uintptr_t k = (uintptr_t)p;
    pthread_mutex_lock(&g_lock);
    slot_t *s = find(k);
    if (s) { /* already live (should not happen): just retag */
        s->kind = kind;
        pthread_mutex_unlock(&g_lock);
        return 0;
    }
    if ((g_used + 1) * 2 > g_cap) /* grow when live entries dominate, else purge tombstones */
        rehash(g_cap == 0 ? 64 : ((g_live + 1) * 4 > g_cap ? g_cap * 2 : g_cap));
    if (!g_tab) { pthread_mutex_unlock(&g_lock); return -1; }
    size_t j = hash_ptr(k) & (g_cap - 1);
    while (g_tab[j].key > 1) j = (j + 1) & (g_cap - 1);
    if (g_tab[j].key == 0) g_used++;
    g_tab[j].key = k;
    g_tab[j].kind = kind;
    g_live++;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int objreg_del(const void *p, int kind)
{
    int rc = -1;
    pthread_mutex_lock(&g_lock);
    slot_t *s = find((uintptr_t)p);
    if (s && s->kind == kind) {
        s->key = 1; /* tombstone: keeps probe chains intact */
        g_live--;
        rc = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int objreg_kind(const void *p)
{
    pthread_mutex_lock(&g_lock);
    slot_t *s = find((uintptr_t)p);
    int k = s ? s->kind : 0;
    pthread_mutex_unlock(&g_lock);
    return k;
}

int64_t objreg_live(void)
{
    pthread_mutex_lock(&g_lock);
    int64_t n = (int64_t)g_live;
    pthread_mutex_unlock(&g_lock);
    return n;
}
