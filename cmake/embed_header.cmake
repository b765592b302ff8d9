# Turns the file IN into a C source OUT defining rk__kernel_header_text.
file(READ ${IN} content HEX)
string(LENGTH "${content}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE ${OUT}
  "/* Generated from rk/kernel.h; do not edit. */\n"
  "#include <stddef.h>\n"
  "const char rk__kernel_header_text[] = {${bytes} 0};\n"
  "const size_t rk__kernel_header_size = ${len};\n")
