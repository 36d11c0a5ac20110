/* TensorBoard event files from C: events.out.tfevents.<time>.<host>, TFRecord-framed Event
 * messages (length, masked CRC-32C of it, the Event, masked CRC-32C of it), as tf.summary's
 * FileWriter writes them; the `train` executable's --logdir. */
#ifndef TFC_EVENTS_H
#define TFC_EVENTS_H

#include <stdint.h>
#include <stdio.h>

#include "tfc_runtime.h"

typedef struct {
    FILE *file;
    char path[4096];
} tfc_events;

/* Create DIR (and its parents) and a new event file in it holding the version event. */
int tfc_events_open(tfc_events *e, const char *dir, tfc_error *err);

/* Append an Event at `step` whose Summary holds one simple value per tag. */
int tfc_events_scalars(tfc_events *e, int64_t step, int n, const char *const *tags,
                       const float *values, tfc_error *err);

/* Flush what was written to the file (the reader sees it). */
int tfc_events_flush(tfc_events *e, tfc_error *err);

void tfc_events_close(tfc_events *e);

#endif
