/* The status codes every function of the runtime and of the generated code returns.
 *
 * 0 to 15 are TensorFlow's error codes (Python maps them to tf.errors). The codes from 100 are
 * the embeddable library's checks of its arguments (tfc compile --target embed; model.h
 * includes this header and says which function returns which). */
#ifndef TFC_STATUS_H
#define TFC_STATUS_H

enum {
    TFC_OK = 0,
    TFC_ERR_CANCELLED = 1,
    TFC_ERR_UNKNOWN = 2,
    TFC_ERR_INVALID_ARGUMENT = 3,
    TFC_ERR_DEADLINE_EXCEEDED = 4,
    TFC_ERR_NOT_FOUND = 5,
    TFC_ERR_PERMISSION_DENIED = 7,
    TFC_ERR_RESOURCE_EXHAUSTED = 8,
    TFC_ERR_FAILED_PRECONDITION = 9,
    TFC_ERR_ABORTED = 10,
    TFC_ERR_OUT_OF_RANGE = 11,
    TFC_ERR_UNIMPLEMENTED = 12,
    TFC_ERR_INTERNAL = 13,
    TFC_ERR_UNAVAILABLE = 14,
    TFC_ERR_DATA_LOSS = 15,
    TFC_ERR_NULL_POINTER = 100,     /* a pointer argument is NULL */
    TFC_ERR_ALIGNMENT = 101,        /* a memory block is not aligned as model.h requires */
    TFC_ERR_ARENA_TOO_SMALL = 102,  /* arena_bytes is less than <P>ARENA_BYTES */
    TFC_ERR_BUFFER_TOO_SMALL = 103, /* a state, weights or variables block is too small */
    TFC_ERR_NON_FINITE = 104        /* a train step's loss, a gradient or a hyperparameter is
                                       NaN or infinite: the state is unchanged */
};

#endif /* TFC_STATUS_H */
