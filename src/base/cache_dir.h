/* The on-disk cache: where it lives, which of its directories and entries
 * rk trusts, and entries that carry their own size and checksum.
 *
 *   char dir[4096], path[4200];
 *   if (rk__cache_dir("cpu", dir, sizeof dir) == RK_OK) {  // created, checked
 *     snprintf(path, sizeof path, "%s/%s.so", dir, key);
 *     void *data = NULL;
 *     size_t n = 0;
 *     if (rk__cache_read(path, key, kMax, &data, &n) == RK_OK) ...;  // a hit
 *     rk__cache_write(path, key, image, size);  // after a build; best effort
 *   }
 *
 * The cache root is $RK_CACHE_DIR, else $XDG_CACHE_HOME/rk, else
 * $HOME/.cache/rk. Directories rk creates there are 0700 and entries 0600.
 * A directory or an entry is used only when it is owned by the effective
 * user and not writable by group or others (the rule ssh and ccache apply):
 * anything else could hold code or data another local user put there. The
 * directories above the root are not examined.
 *
 * An entry is the payload followed by a 32-byte trailer: "rkcache1", the
 * payload's size (64-bit little-endian) and a 128-bit checksum of the key
 * and the payload. An entry whose trailer does not match (truncated,
 * overwritten, renamed from another key) is reported as damaged, never
 * returned.
 *
 * Every refusal is a status with the reason in rk_last_error(); callers
 * decide whether to fall back (a private directory, no cache). All functions
 * are thread-safe.
 */
#ifndef RK_BASE_CACHE_DIR_H_
#define RK_BASE_CACHE_DIR_H_

#include <stdbool.h>
#include <stddef.h>

#include "rk/status.h"

/* The cache root (not created, not checked) into out. RK_ERR_NOT_FOUND when
 * none of RK_CACHE_DIR, XDG_CACHE_HOME and HOME is set; RK_ERR_OUT_OF_RANGE
 * when the path does not fit in cap bytes. */
rk_status_t rk__cache_root(char *out, size_t cap);

/* Whether an existing directory (want_dir) or regular file at path may be
 * trusted: owned by the effective user, not writable by group or others.
 * Symbolic links are followed. RK_OK when trusted; RK_ERR_NOT_FOUND when
 * nothing is there; RK_ERR_UNAVAILABLE naming the owner or mode otherwise. */
rk_status_t rk__cache_check(const char *path, bool want_dir);

/* <root>/<sub> into out: created with mode 0700 where missing, and the root
 * and <sub> checked with rk__cache_check (nothing is created inside a root
 * that is refused). sub, one path component, may be NULL or "" for the root
 * itself. RK_ERR_NOT_FOUND when there is no root (see rk__cache_root);
 * RK_ERR_UNAVAILABLE when a directory cannot be created or is refused. The
 * directory may still be read-only to this user: writes can fail later. */
rk_status_t rk__cache_dir(const char *sub, char *out, size_t cap);

/* Reads the entry at path for key: a regular file (not a symbolic link)
 * that passes rk__cache_check, at most max_size bytes of payload, with a
 * trailer that matches. *out_data is the payload (malloc'd, with a NUL after
 * it for text images; the caller frees it), *out_size its size.
 * RK_ERR_NOT_FOUND when there is no entry; RK_ERR_UNAVAILABLE when it is
 * refused, unreadable or damaged (the message says which). */
rk_status_t rk__cache_read(const char *path, const char *key, size_t max_size,
                           void **out_data, size_t *out_size);

/* Writes data as the entry for key at path, mode 0600, through a temporary
 * file in the same directory and a rename, so that readers see either the
 * old entry or the whole new one. RK_ERR_UNAVAILABLE with the reason (a full
 * disk, a read-only directory) when it cannot; nothing is left behind. */
rk_status_t rk__cache_write(const char *path, const char *key, const void *data,
                            size_t size);

#endif /* RK_BASE_CACHE_DIR_H_ */
