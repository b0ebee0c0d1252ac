/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_serve.h: what the in-process stand-ins (la_test_peer.h,
 * la_test_global.h) share: a loopback listener, the guard that keeps their
 * server threads out of the way of fork(), a connection's frames read and
 * handed out one by one, and a bounded wait on a condition variable. Test
 * use only.
 */
#ifndef LA_TEST_SERVE_H
#define LA_TEST_SERVE_H

#include <pthread.h>
#include <stdint.h>

#include "la_codec.h"

/* A listening TCP socket on 127.0.0.1:port (0: ephemeral; SO_REUSEADDR, so
 * a port can be listened on again after a kill), close-on-exec. Sets
 * *bound to the port. Returns the descriptor, or -1. */
int la_test_listen(uint16_t port, uint16_t *bound);

/* Tests fork application processes while a stand-in's thread serves. A
 * child forked while that thread is inside malloc would inherit a locked
 * allocator and hang (sanitizer allocators are not fork-safe). So a server
 * thread works only between la_test_serve_lock and la_test_serve_unlock;
 * fork() takes the same lock first (pthread_atfork, installed by the first
 * call), so forks happen while server threads wait in poll(). */
void la_test_serve_lock(void);
void la_test_serve_unlock(void);
/* The end of a server thread, after it closed its connections: closes the
 * listening socket *lfd, sets it to -1 and leaves the lock. */
void la_test_serve_end(int *lfd);

/* Waits on cv (mu not held by the caller) until done(arg) is true, for at
 * most timeout_ms. Returns 0, or -1 on timeout. */
int la_test_cond_wait(pthread_mutex_t *mu, pthread_cond_t *cv,
                      int (*done)(void *), void *arg, int timeout_ms);

/* A stand-in's wake-up pipe: la_test_wake writes a byte to fd (the write
 * end) so that the server's poll() returns at once after a setting
 * changed; la_test_wake_drain reads what is waiting on fd (the read end)
 * when poll() said it is readable. A lost byte only delays: the server
 * loops poll every 10 ms anyway. */
void la_test_wake(int fd);
void la_test_wake_drain(int fd);

/* One turn of a stand-in's server loop, called with la_test_serve_lock
 * held: polls the listener lfd, the wake-up pipe's read end wake_rd and
 * the connections fd_of(arg, i), i in [0, n) (a negative fd is an unused
 * slot), for up to 10
 * ms with the lock released (forks happen then), drains the wake-up pipe,
 * then calls on_accept(arg) when the listener is readable and
 * on_conn(arg, i) for each readable connection i, in order. on_conn must
 * cope with a slot an earlier call closed. */
void la_test_serve_poll(int lfd, int wake_rd, int (*fd_of)(void *arg, int i),
                        int n, void (*on_accept)(void *arg),
                        void (*on_conn)(void *arg, int i), void *arg);

/* A frame handler of la_test_serve_frames: payload (len bytes) is valid
 * only during the call. Returns 0 to go on, anything else to stop. */
typedef int (*la_test_frame_fn)(void *arg, uint16_t type,
                                const uint8_t *payload, uint32_t len);

/* Reads what connection fd has now (recv without waiting) into rd and
 * hands every complete frame to on_frame(arg, ...), in order. Returns 0
 * when all was handled (nothing waiting included), 1 when the peer closed
 * or recv failed, on_frame's result when not 0 (the frames after it stay
 * in rd), or rd's error (LA_EPROTO, LA_EMSGSIZE, LA_ENOMEM: a bad stream,
 * to be closed). */
int la_test_serve_frames(int fd, la_frame_reader_t *rd,
                         la_test_frame_fn on_frame, void *arg);

#endif /* LA_TEST_SERVE_H */
