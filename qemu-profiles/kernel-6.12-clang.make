# make variables of `make kernel KVERSION=6.12 KVARIANT=clang` (scripts/
# kernel-config.sh): the whole LLVM toolchain (clang, ld.lld, llvm-ar,
# llvm-objcopy, ..., and its integrated assembler), Debian 12's clang-14
LLVM=1
