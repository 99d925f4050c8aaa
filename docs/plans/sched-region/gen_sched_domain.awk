# prototype of gen_fgkaslr_lds' sched domain: input readelf -SW vmlinux.o
/^ *\[ *[0-9]+\]/ {
	sub(/^[^]]*\] */, "")
	if ($2 != "PROGBITS" || $7 !~ /AX/)
		next
	if ($1 == ".sched.text") { print "plain .sched.text left in vmlinux.o" > "/dev/stderr"; bad = 1; exit 1 }
	if ($1 !~ /^\.sched\.text\./)
		next
	size = 0
	for (i = 1; i <= length($5); i++)
		size = size * 16 + index("0123456789abcdef", substr($5, i, 1)) - 1
	a = $10 > 1 ? $10 : 1
	name[n++] = $1; sz[$1] = size; al[$1] = a
}
END {
	if (bad) exit 1
	printf "\t__sched_text_start = .;\n\t/* nothing fixed ends where a section starts */\n\t. = . + 1;\n"
	amax = 1; total = 0
	for (k = 0; k < n; k++) {
		s = sz[name[k]]; a = al[name[k]]
		printf "\t%s : { *(%s) } =0xcccc\n", name[k], name[k]
		if (!s) continue
		cnt[a]++; if (a > amax) amax = a
		total += s + (a - s % a) % a
	}
	total += 1 + 2 * (amax - 1)
	below = 0
	for (a = 1; a <= amax; a *= 2) { total += (a - 1) * (cnt[a] < below ? cnt[a] : below); below += cnt[a] }
	printf "\t__fgkaslr_nr_sched_sections = ABSOLUTE(%d);\n", n
	printf "\t. = MAX(., __sched_text_start + %d);\n\t__sched_text_end = .;\n", total
}
