/* What the data readers share inside the runtime (see tfc_data.h for the public API). */
#ifndef TFC_DATA_INTERNAL_H
#define TFC_DATA_INTERNAL_H

#include <stddef.h>

#include "tfc_data.h"

#define TFC_NPY_MAGIC "\x93NUMPY"
#define TFC_NPY_MAGIC_LEN 6


/* Parse a whole file's text into ds->rows, cols, values, lines (ds->path is set). */
int tfc_csv_parse(tfc_dataset *ds, const char *text, size_t size, tfc_error *err);
int tfc_npy_parse(tfc_dataset *ds, const unsigned char *data, size_t size, tfc_error *err);
/* Whether a file starts as a TFRecord file does: a record length and its masked CRC-32C. */
int tfc_tfrecord_looks_like(const unsigned char *data, size_t size);
int tfc_tfrecord_parse(tfc_dataset *ds, const unsigned char *data, size_t size, tfc_error *err);

#endif /* TFC_DATA_INTERNAL_H */
