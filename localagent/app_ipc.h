/* app_ipc.h: the LocalAgent's side of an application's shared memory.
 *
 * Attaches a registering process's segment and semaphore set after proving
 * they are that process's: the segment exists and was created by the pid the
 * registration names, both objects are mode 0600 and owned by the uid that
 * owns the connecting socket and the process, the header is consistent
 * (la_shm_header_check) and quotes the registration's nonce. Then reads a
 * buffer (copy scaled to the metric's unit, zero, give back through the
 * semaphore) and finally removes both objects. No libuv: unit-testable and
 * callable from worker threads (la_app_ipc_take touches only its buffer).
 */
#ifndef LA_APP_IPC_H
#define LA_APP_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "la_shm_layout.h"

typedef struct la_app_ipc {
  la_shm_header_t *hdr;
  int shm_id, sem_id;
  uint32_t n_buffers;
  uint64_t n_elements;
  int owner_uid;
} la_app_ipc_t;

/* Verifies and attaches. peer_uid is the uid owning the connecting socket,
 * or -1 when unknown (then only the process's uid is compared). Returns 0, or
 * LA_EREFUSED with the reason in why (nothing stays attached). */
int la_app_ipc_attach(la_app_ipc_t *ipc, int shm_id, int sem_id, int pid,
                      uint64_t nonce, uint64_t n_elements, uint32_t n_buffers,
                      int peer_uid, char *why, size_t why_len);

/* Copies buffer i, multiplied by its meta scale, into out[0..n) and zeroes
 * the buffer (which stays the agent's until la_app_ipc_give_back). *meta
 * receives the buffer's meta data as the application wrote it. Returns 0;
 * LA_EINVAL for a bad index. */
int la_app_ipc_take(la_app_ipc_t *ipc, uint32_t i, double *out,
                    la_shm_bufmeta_t *meta);

/* Zeroes buffer i without reading it (out of memory). */
void la_app_ipc_discard(la_app_ipc_t *ipc, uint32_t i);

/* Gives buffer i back to the application (semaphore +1). A semaphore set
 * already removed (the application finalized) is not an error. */
void la_app_ipc_give_back(la_app_ipc_t *ipc, uint32_t i);

/* Detaches and removes the segment and the semaphore set (either may be gone
 * already). Idempotent. */
void la_app_ipc_release(la_app_ipc_t *ipc);

/* The uid owning the peer of a connected loopback TCP socket, read from
 * /proc/net/tcp{,6}; -1 when it cannot be found. */
int la_peer_uid(int fd);

#endif
