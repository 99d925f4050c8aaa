/* SPDX-License-Identifier: GPL-2.0 */
/* Internal: one DWARF line program, read sequence by sequence (lib/lineprog.c). */
#ifndef FGK_LIB_LINEPROG_H
#define FGK_LIB_LINEPROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fgk_line_row {
	uint64_t addr;		/* the row's address */
	uint64_t file;		/* file register: an index into the CU's file table */
	int line, column;
};

/*
 * The row for addr in the line program at off of a .debug_line section
 * (data, size): the sequence whose [first row, end) holds addr, and in it
 * the last row at the greatest address not above addr.  1: found; 0: no
 * sequence holds addr; -1: the program is malformed (or uses VLIW op_index).
 */
int fgk__lineprog_find(const uint8_t *data, size_t size, uint64_t off,
		       uint64_t addr, struct fgk_line_row *row);

#endif
