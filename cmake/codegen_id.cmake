# Writes to OUT a C source defining rk__codegen_id: a SHA-256 over every
# file of the transpiler (DIR, *.c and *.h), the kernel header (HEADER) and
# the files that add code of their own around the transpiler's output
# (EXTRA, a ;-list: the CPU backend's launch wrappers), so anything cached
# from what reaches a compiler can be keyed on what produced it.
file(GLOB files ${DIR}/*.c ${DIR}/*.h)
list(SORT files)
set(all "")
foreach(f ${files} ${HEADER} ${EXTRA})
  file(SHA256 ${f} h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 id "${all}")
file(WRITE ${OUT}
  "/* Generated from the transpiler's sources; do not edit. */\n"
  "const char rk__codegen_id[] = \"${id}\";\n")
