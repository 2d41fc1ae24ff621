/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's file transfers (PROTOCOL.md): WRITE_FILE with its
 * FILE_DATA and FILE_END frames, and READ_FILE.
 */
#ifndef EMBER_GUEST_AGENT_FILES_H
#define EMBER_GUEST_AGENT_FILES_H

#include <stdint.h>

#include "agent_conn.h"

/* WRITE_FILE: open the file (or its temporary copy) for FILE_DATA. */
void agent_files__write(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload);

/* FILE_DATA: append the payload; an error is kept for FILE_END. */
void agent_files__data(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* FILE_END: finish the file (rename the copy over it); OK or ERROR. */
void agent_files__end(struct conn *c, const struct ember_agent_hdr *h);

/* READ_FILE: the file as FILE_DATA frames and FILE_END, or ERROR. */
void agent_files__read(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* The host is gone mid-transfer: close @s's file, the old file stays. */
void agent_files__abandon(struct slot *s);

#endif /* EMBER_GUEST_AGENT_FILES_H */
