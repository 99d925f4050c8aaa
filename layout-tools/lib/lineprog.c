// SPDX-License-Identifier: GPL-2.0
/*
 * One DWARF line program (.debug_line, versions 2 to 5), read sequence by
 * sequence.
 *
 * libdw merges the sequences of a compilation unit into one table sorted
 * by address, which forgets which sequence a row came from.  That loses
 * the answer where one sequence ends at the address another starts at and
 * the ending one has rows at its end address (gcc emits such zero-length
 * rows after a function's last instruction): libdw may answer with a row
 * of the sequence that ended.  In a vmlinux that never happens inside a
 * function (checked on every such address of two kernels), but in a .ko
 * libdwfl lays the sections out back to back, so `f.cold` ends exactly
 * where `f` starts.  lib/dwarf.c asks this reader in those cases; it
 * answers as binutils does: the sequence whose [first row, end) holds the
 * address, and in it the last row at the greatest address not above it.
 *
 * The bytes are the user's file: every read is bounded, any malformed
 * header or opcode ends the search with "malformed" and the caller keeps
 * libdw's answer.
 */
#include <string.h>

#include "lineprog.h"

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd(struct reader *r, size_t n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t uleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	for (;;) {
		uint8_t b = (uint8_t)rd(r, 1);

		if (r->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t sleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = (uint8_t)rd(r, 1);
		if (r->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

struct state {
	uint64_t addr, file;
	int64_t line;
	uint64_t column;
};

struct search {
	uint64_t want;
	bool in_seq, have;		/* a sequence is open; a candidate row */
	uint64_t seq_low;
	struct fgk_line_row best;
};

static void emit(struct search *s, const struct state *st)
{
	if (!s->in_seq) {
		s->in_seq = true;
		s->seq_low = st->addr;
		s->have = false;
	}
	/* the last row at the greatest address not above the one wanted */
	if (st->addr <= s->want && (!s->have || st->addr >= s->best.addr)) {
		s->have = true;
		s->best.addr = st->addr;
		s->best.file = st->file;
		s->best.line = st->line < 0 ? 0 : st->line > INT32_MAX ? INT32_MAX : (int)st->line;
		s->best.column = st->column > INT32_MAX ? INT32_MAX : (int)st->column;
	}
}

/* The sequence ends at st->addr: did it hold the address? */
static bool end_sequence(struct search *s, const struct state *st)
{
	bool hit = s->in_seq && s->have && s->seq_low <= s->want && s->want < st->addr;

	s->in_seq = false;
	s->have = false;
	return hit;
}

int fgk__lineprog_find(const uint8_t *data, size_t size, uint64_t off,
		       uint64_t addr, struct fgk_line_row *row)
{
	struct reader r = { data, data + size, false }, u;
	uint64_t len, hdrlen;
	unsigned int version, offsz = 4, addrsz = 8, min_inst, line_range;
	unsigned int opcode_base;
	int line_base;
	bool is_stmt_default;
	const uint8_t *std_lengths, *prog;
	struct search s = { .want = addr };
	struct state st;

	memset(row, 0, sizeof(*row));
	if (off >= size)
		return -1;
	r.p = data + off;
	len = rd(&r, 4);
	if (len == 0xffffffff) {
		len = rd(&r, 8);
		offsz = 8;
	} else if (len >= 0xfffffff0) {
		return -1;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -1;
	r.end = r.p + len;		/* this unit only */
	version = (unsigned int)rd(&r, 2);
	if (version < 2 || version > 5)
		return -1;
	if (version >= 5) {
		addrsz = (unsigned int)rd(&r, 1);
		rd(&r, 1);		/* segment selector size */
	}
	hdrlen = rd(&r, offsz);
	if (r.bad || hdrlen > (uint64_t)(r.end - r.p))
		return -1;
	prog = r.p + hdrlen;
	min_inst = (unsigned int)rd(&r, 1);
	if (version >= 4 && rd(&r, 1) != 1)
		return -1;		/* VLIW op_index: not x86, not read here */
	is_stmt_default = rd(&r, 1);
	(void)is_stmt_default;
	line_base = (int8_t)rd(&r, 1);
	line_range = (unsigned int)rd(&r, 1);
	opcode_base = (unsigned int)rd(&r, 1);
	if (r.bad || !line_range || !opcode_base || opcode_base - 1 > (size_t)(r.end - r.p))
		return -1;
	std_lengths = r.p;
	if (addrsz != 4 && addrsz != 8)
		return -1;

	u = (struct reader){ prog, r.end, false };
	memset(&st, 0, sizeof(st));
	st.file = 1;
	st.line = 1;
	while (u.p < u.end && !u.bad) {
		unsigned int op = (unsigned int)rd(&u, 1);

		if (op >= opcode_base) {
			unsigned int adj = op - opcode_base;

			st.addr += (uint64_t)min_inst * (adj / line_range);
			st.line += line_base + (int)(adj % line_range);
			emit(&s, &st);
			continue;
		}
		switch (op) {
		case 0: {		/* extended */
			uint64_t n = uleb(&u);
			const uint8_t *next;
			unsigned int sub;

			if (u.bad || !n || n > (uint64_t)(u.end - u.p))
				return -1;
			next = u.p + n;
			sub = (unsigned int)rd(&u, 1);
			if (sub == 1) {		/* DW_LNE_end_sequence */
				if (end_sequence(&s, &st)) {
					*row = s.best;
					return 1;
				}
				memset(&st, 0, sizeof(st));
				st.file = 1;
				st.line = 1;
			} else if (sub == 2) {	/* DW_LNE_set_address */
				if (n - 1 != 4 && n - 1 != 8)
					return -1;
				st.addr = rd(&u, n - 1);
			}
			u.p = next;		/* others: define_file, discriminator, ... */
			break;
		}
		case 1:			/* DW_LNS_copy */
			emit(&s, &st);
			break;
		case 2:			/* DW_LNS_advance_pc */
			st.addr += (uint64_t)min_inst * uleb(&u);
			break;
		case 3: {		/* DW_LNS_advance_line */
			int64_t by = sleb(&u);

			if (by > INT32_MAX || by < -(int64_t)INT32_MAX)
				return -1;
			st.line += by;	/* both within +-2^31: no overflow */
			break;
		}
		case 4:			/* DW_LNS_set_file */
			st.file = uleb(&u);
			break;
		case 5:			/* DW_LNS_set_column */
			st.column = uleb(&u);
			break;
		case 8:			/* DW_LNS_const_add_pc */
			st.addr += (uint64_t)min_inst * ((255 - opcode_base) / line_range);
			break;
		case 9:			/* DW_LNS_fixed_advance_pc */
			st.addr += rd(&u, 2);
			break;
		default:		/* 6, 7, 10, 11 take no operand; others by the header */
			for (unsigned int i = 0; i < std_lengths[op - 1]; i++)
				uleb(&u);
			break;
		}
		/* keep line numbers in a sane range on hostile input */
		if (st.line > INT32_MAX || st.line < -(int64_t)INT32_MAX)
			return -1;
	}
	return u.bad ? -1 : 0;
}
