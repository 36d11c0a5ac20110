/* Queues of tensors (tf.FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue, PriorityQueue): the state
 * a Session keeps between steps, in native memory, safe across threads.
 *
 * A queue holds up to `capacity` elements; an element is one tensor per component, copied in by
 * tfc_queue_enqueue and out by tfc_queue_batch_copy. Calls block (on a condition variable, the
 * queue's mutex released) until they can proceed, the queue is closed, a deadline passes or the
 * queue is cancelled (its session closed). Enqueue calls proceed one at a time, each until all
 * its elements are in; so do dequeue calls, each until it has all its elements, so the elements
 * of one call stay together as TensorFlow's queues keep them. A dequeue that fails (closed with
 * too few elements, its deadline passed, cancelled) puts back what it took, in order.
 *
 * Kinds: FIFO (first in, first out; the padding queue is a FIFO queue whose batches are padded
 * by tfc_queue_batch_copy), RANDOM_SHUFFLE (a uniformly random element, taken only while more
 * than `min_after_dequeue` remain, unless the queue is closed), PRIORITY (the element whose
 * component 0, an int64 scalar, is smallest; equal priorities in enqueue order).
 *
 * Errors return a TFC_ERR_* code (TensorFlow's) with TensorFlow's message in err->msg:
 * CANCELLED (enqueue to a closed queue, pending enqueues cancelled by close, or the session
 * closed), OUT_OF_RANGE (a closed queue with too few elements), DEADLINE_EXCEEDED,
 * RESOURCE_EXHAUSTED (out of memory). Needs POSIX threads; not part of the embeddable library. */
#ifndef TFC_QUEUE_H
#define TFC_QUEUE_H

#include <stdint.h>

#include "tfc_runtime.h"

enum { TFC_QUEUE_FIFO = 0, TFC_QUEUE_RANDOM_SHUFFLE = 1, TFC_QUEUE_PRIORITY = 2 };

typedef struct tfc_queue tfc_queue;
typedef struct tfc_queue_batch tfc_queue_batch;

/* A new empty queue, or NULL without memory. `label` starts its messages ("FIFOQueue 'q'");
 * `seed`, `seed2` seed a RANDOM_SHUFFLE queue's choices. */
tfc_queue *tfc_queue_new(const char *label, int kind, int64_t capacity, int components,
                         int64_t min_after_dequeue, uint64_t seed, uint64_t seed2);

/* Cancel the queue's waiting calls, wait until no call is inside it, and free it. */
void tfc_queue_free(tfc_queue *q);

/* The clock deadlines are on: monotonic nanoseconds. A deadline of 0 means none. */
int64_t tfc_queue_clock_ns(void);

/* Enqueue `n` elements: component c of element i is nbytes[i * components + c] bytes at
 * data[i * components + c] (copied), of shape dims[offset_c .. offset_c + ranks[c]) where
 * offset_c is the sum of the ranks before c (every element of one call has the same shapes; a
 * string component's bytes are its caller's encoding of its strings). A PRIORITY queue reads
 * each element's priority from component 0 (an int64). On failure the elements not yet in the
 * queue are dropped; those already in stay. */
int tfc_queue_enqueue(tfc_queue *q, int64_t n, const void *const *data, const int64_t *nbytes,
                      const int32_t *ranks, const int64_t *dims, int64_t deadline_ns,
                      tfc_error *err);

/* Take `n` elements into a new batch (*out). With `allow_fewer`, a closed queue with fewer than
 * `n` but at least one element gives those. */
int tfc_queue_dequeue(tfc_queue *q, int64_t n, int allow_fewer, int64_t deadline_ns,
                      tfc_queue_batch **out, tfc_error *err);

int64_t tfc_queue_batch_count(const tfc_queue_batch *b);

/* The largest size of each dimension of component c over the batch's elements, into dims (room
 * for `cap` dims): its rank; -1 when the elements' ranks differ, -2 when a rank exceeds cap.
 * *uniform is set to whether every element has exactly those dims. */
int tfc_queue_batch_dims(const tfc_queue_batch *b, int c, int64_t *dims, int cap, int *uniform);

/* Copy component c of every element of the batch into `out`, element i at element offset
 * i * prod(dims): an element smaller than dims (a padding queue's) fills the leading corner, the
 * rest is zero. `itemsize` is the bytes of one value. */
void tfc_queue_batch_copy(const tfc_queue_batch *b, int c, void *out, const int64_t *dims,
                          int rank, int64_t itemsize);

/* The bytes of component c of element i of the batch (a string component's encoding). */
const void *tfc_queue_batch_element(const tfc_queue_batch *b, int64_t i, int c, int64_t *nbytes);

void tfc_queue_batch_free(tfc_queue_batch *b);

/* Close: later enqueues fail; dequeues take what is left. With `cancel_pending_enqueues`, the
 * enqueues waiting for room fail too. */
void tfc_queue_close(tfc_queue *q, int cancel_pending_enqueues);

/* Fail every waiting and later call with CANCELLED (the session holding the queue closed). */
void tfc_queue_cancel(tfc_queue *q);

int64_t tfc_queue_size(tfc_queue *q);
int tfc_queue_is_closed(tfc_queue *q);

#endif /* TFC_QUEUE_H */
