/* Data for standalone training and prediction: CSV and .npy tables read into memory, epochs
 * shuffled and cut into batches, rows converted to the element types of a program's inputs,
 * and .npy files written.
 *
 * A table is rows x columns of doubles: every value of a CSV file or of a 2-D .npy array of
 * any numeric type fits one exactly (integers up to 2^53). Conversion to a program input's
 * type checks what would otherwise be silently wrong (a label 1.5 fed as an int32).
 *
 * CSV: comma-separated numbers, one row per line; blank lines are skipped; a first line with
 * a field that is not a number is a header and skipped (the Iris files' "120,4,setosa,...").
 * Every row must have the first row's number of columns. Errors name the file, the line and
 * the column ("iris.csv:7: column 3: 'abc' is not a number").
 *
 * TFRecord files (recognized by the checksum of their first record's length) of tf.train.Example
 * records: a record is a row, its features' float or int64 values the columns, features in
 * the byte order of their names; every record has the first one's features and lengths.
 *
 * Errors return a TFC_ERR_* code with a message in err->msg, as the checkpoint functions do. */
#ifndef TFC_DATA_H
#define TFC_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_runtime.h"

/* Element types: TensorFlow's DataType numbers, the same as the checkpoint format's. */
enum {
    TFC_DT_F32 = TFC_CHECKPOINT_F32,
    TFC_DT_F64 = TFC_CHECKPOINT_F64,
    TFC_DT_I32 = TFC_CHECKPOINT_I32,
    TFC_DT_I64 = TFC_CHECKPOINT_I64,
    TFC_DT_BOOL = TFC_CHECKPOINT_BOOL
};

/* Bytes per element of `dtype`; 0 for an unknown type. */
int64_t tfc_dtype_size(int dtype);
/* "float32", "int64", ...; "unknown" for an unknown type. */
const char *tfc_dtype_name(int dtype);

typedef struct {
    char *path;      /* a copy of the file's name, for messages */
    int64_t rows;
    int64_t cols;
    double *values;  /* rows * cols, row-major */
    int64_t *lines;  /* CSV: the file line of each row (1-based); NULL for .npy */
} tfc_dataset;

/* Read `path`: a .npy file (recognized by its magic bytes, whatever its name) or CSV; a file
 * named *.npy without the magic bytes is refused, not read as CSV. On success free the table
 * with tfc_dataset_free; on failure nothing is left to free. */
int tfc_dataset_load(tfc_dataset *ds, const char *path, tfc_error *err);
void tfc_dataset_free(tfc_dataset *ds);

/* Refuse a value of columns [col, col + ncols) that is not a finite number: NaN, an infinity,
 * or a literal out of range (1e999 reads as one). TFC_ERR_INVALID_ARGUMENT naming the file,
 * the line (or row) and the column; the executables skip it with --allow-nonfinite. */
int tfc_dataset_check_finite(const tfc_dataset *ds, int64_t col, int64_t ncols, tfc_error *err);

/* Refuse a label of columns [col, col + ncols) that is not a class id: an integer in
 * [0, n_classes) (n_classes <= 0: any integer >= 0). Errors name file, line and column. */
int tfc_dataset_check_labels(const tfc_dataset *ds, int64_t col, int64_t ncols,
                             int64_t n_classes, tfc_error *err);

/* Convert columns [col, col + ncols) of the rows `rows[0..n)` to `dtype`, row after row,
 * into `out` (n * ncols elements). Integer and bool types take only values that are exact
 * in them (TFC_ERR_INVALID_ARGUMENT, naming the row's line and the column, otherwise). */
int tfc_dataset_gather(const tfc_dataset *ds, const int64_t *rows, int64_t n, int64_t col,
                       int64_t ncols, int dtype, void *out, tfc_error *err);

/* "file:line" (CSV) or "file: row r" (.npy) of row `row`, for messages; returns `buf`. */
const char *tfc_dataset_where(const tfc_dataset *ds, int64_t row, char *buf, size_t cap);

/* An endless stream of row indices cut into batches. Epoch e visits every row once, in file
 * order or, when shuffling, in an order that depends only on (seed, e): a stream can so be
 * restarted at any example, as resuming training from a checkpoint does. A batch that reaches
 * the end of an epoch continues into the next one: every batch is full. */
typedef struct {
    int64_t n_rows;
    int64_t batch;
    uint64_t seed;
    int shuffle;
    int64_t epoch;  /* the epoch `order` holds */
    int64_t pos;    /* the next position in `order` */
    int64_t *order; /* the rows of the current epoch */
} tfc_batcher;

/* A stream over `n_rows` rows whose first batch starts at example `start` of the stream
 * (start = global_step * batch continues an earlier run). */
int tfc_batcher_init(tfc_batcher *b, int64_t n_rows, int64_t batch, uint64_t seed, int shuffle,
                     int64_t start, tfc_error *err);
/* The next `batch` row indices. */
void tfc_batcher_next(tfc_batcher *b, int64_t *rows);
void tfc_batcher_free(tfc_batcher *b);

/* Write a C-order .npy file of `rank` dims (format 1.0, little-endian). */
int tfc_npy_write(const char *path, int dtype, int rank, const int64_t *dims, const void *data,
                  tfc_error *err);

#endif /* TFC_DATA_H */
