# Writes to OUT a C source defining rk__codegen_id: a SHA-256 over every
# file of the transpiler (DIR, *.c and *.h) and the kernel header (HEADER),
# so anything cached from the front end's output can be keyed on the
# front end itself.
file(GLOB files ${DIR}/*.c ${DIR}/*.h)
list(SORT files)
set(all "")
foreach(f ${files} ${HEADER})
  file(SHA256 ${f} h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 id "${all}")
file(WRITE ${OUT}
  "/* Generated from the transpiler's sources; do not edit. */\n"
  "const char rk__codegen_id[] = \"${id}\";\n")
