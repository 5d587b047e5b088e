/* A stream as stream.c, event.c and devtime.c see it.  Every stream (the default stream of
 * each device included) carries a device clock: the time the work run on it has taken, in
 * nanoseconds (devtime.c decides what a piece of work costs).  An event records that clock. */
#ifndef SWC_CORE_STREAM_H_
#define SWC_CORE_STREAM_H_
#include <stdint.h>

typedef struct stream {
    uint32_t magic;
    int dev;
    uint64_t serial;   /* never reused, unlike the address: events name their stream by it */
    uint64_t clock_ns; /* device clock: advanced by every kernel and async copy run on it */
    uint64_t records;  /* events recorded on it so far: an event's place in the stream order */
    int pend_code;
    char pend_msg[1536];
    struct stream *next;
} stream_t;

/* caller holds g_lock */
stream_t *stream_find_locked(void *handle);  /* a live created stream, or NULL */
stream_t *stream_default_locked(int dev);     /* the default stream of a device */
stream_t *stream_by_serial_locked(uint64_t serial); /* a live stream (default ones too), or NULL */

/* event.c, caller holds g_lock: the events recorded on stream `serial` up to its `upto`-th
 * record have completed (a successful synchronize of their stream or of a later event) */
void events_completed_locked(uint64_t serial, uint64_t upto);
void events_reset_device_locked(int dev); /* aclrtResetDevice / aclFinalize: its events go */
#endif
