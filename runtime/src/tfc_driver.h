/* What the train and predict drivers share: command-line options, messages, clocks, buffers.
 * Internal to the runtime's executables; embedders use tfc_model.h. */
#ifndef TFC_DRIVER_H
#define TFC_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_model.h"

/* Print "PROG: error: MESSAGE" on stderr; returns the exit status of a failed run (1). */
int tfc_driver_error(const char *prog, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Whether argv[*i] is option `name` ("--name VALUE" or "--name=VALUE"): 1 with *value set
 * (and *i moved past a separate value), 0 when it is another argument, -1 (an error printed)
 * when the value is missing. */
int tfc_driver_option(const char *prog, int argc, char **argv, int *i, const char *name,
                      const char **value);

/* Parse an integer >= `min` / a finite number given for option `name`; -1 (error printed) if
 * `text` is not one. */
int tfc_driver_int(const char *prog, const char *name, const char *text, int64_t min,
                   int64_t *out);
int tfc_driver_double(const char *prog, const char *name, const char *text, double *out);

/* Seconds on a monotonic clock. */
double tfc_driver_seconds(void);

/* --threads N: the model's thread pool reads TFC_NUM_THREADS, so the option sets it (N >= 1);
 * 0 when done, else 1 after printing the error */
int tfc_driver_threads(const char *prog, const char *text);

/* Create directory `path` and its missing parents; 0, or -1 with a message in `msg`. */
int tfc_driver_mkdirs(const char *path, char *msg, size_t cap);

/* Whether `path` exists / is a directory. */
int tfc_driver_exists(const char *path);
int tfc_driver_is_dir(const char *path);

/* Element `k` of a buffer of element type `dtype`, as a double. */
double tfc_driver_element(const void *data, int dtype, int64_t k);

#endif /* TFC_DRIVER_H */
