#!/bin/sh
# prototype: ld -r script giving each object's .sched.text its own section
# usage: gen_split.sh READELF archive... > .tmp_fgkaslr_split.lds
readelf=$1; shift
for a in "$@"; do ${readelf} -SW "$a" 2>/dev/null | awk -v A="$a" '
	/^File: / { m = $2; sub(/^[^[]*\[/, "", m); sub(/\]$/, "", m); next }
	/^ *\[ *[0-9]+\]/ {
		sub(/^[^]]*\] */, "")
		if ($1 == ".sched.text" && $2 == "PROGBITS")
			printf "\t.sched.text.%s 0 : { %s:%s(.sched.text) }\n", m, A, m
	}'
done | awk 'BEGIN { print "SECTIONS {" } { if (seen[$1]++) { print "duplicate " $1 > "/dev/stderr"; exit 1 } print } END { print "}" }'
