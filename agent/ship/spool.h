/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spool: queued profiles on disk, so that a server outage longer than the memory queue
 * holds, or a restart during one, loses nothing (DESIGN.md requirement 10).
 *
 * One file per profile, named after its window start and sequence number, so that names
 * sort in sending order: 0000018b2f3c4d5e-00000000000000a1.spool. Written under a temporary
 * name and renamed; read back whole and checked (magic, version, lengths, CRC-32) before
 * use, so a torn or foreign file is dropped, never sent. The folder is locked (flock on
 * .lock) so that two agents never share it; files are 0600 in a 0700 folder.
 *
 * File layout, little-endian, ours only:
 *   "IGNSPOOL" u32 version=1  u64 seq  u64 time_ns  u64 duration_ns
 *   u32 key_len key  u32 nr_labels { u16 name_len name  u16 value_len value }*
 *   u32 data_len data  u32 crc32 (zlib, of every byte before it)
 */
#ifndef IGNIS_SPOOL_H
#define IGNIS_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

struct upload;
struct spool;

/* Create (0700) and lock dir. NULL with errno set: EBUSY if another agent holds it. */
struct spool *spool__open(const char *dir, uint64_t max_bytes);
void spool__free(struct spool *s);

/*
 * Write u (its data must be in memory) and set u->spool_name and u->spool_bytes. Returns
 * 0, -ENOSPC when the file would take the spool past max_bytes + slack, or -errno.
 */
int spool__write(struct spool *s, struct upload *u, uint64_t slack) __must_check;

/* Read u's pprof back: *data malloc'd. Returns 0, -EBADMSG for a damaged file, or -errno. */
int spool__read(struct spool *s, const struct upload *u, uint8_t **data, size_t *len) __must_check;

/* Delete u's file (if any) and clear u->spool_name. */
void spool__remove(struct spool *s, struct upload *u);

typedef int (*spool_entry_fn)(void *ctx, struct upload *u);

/*
 * Call fn for every intact file, oldest first, with a malloc'd upload (data NULL) that fn
 * owns. Damaged and temporary files are deleted and counted. Returns the number of files
 * found damaged, or -errno.
 */
int spool__load(struct spool *s, spool_entry_fn fn, void *ctx) __must_check;

/* Bytes of the files the spool holds. */
uint64_t spool__bytes(const struct spool *s);

/* Free an upload and everything it owns (not its queue links). */
void upload_free(struct upload *u);

#endif /* IGNIS_SPOOL_H */
