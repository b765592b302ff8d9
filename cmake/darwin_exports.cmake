# The exported-symbols list Apple's linker gets for librk.dylib: the public
# rk_* API only, never the internal rk__* (what src/librk.map says to GNU
# ld). ld64 patterns have * and ? but no negated class, so there is one
# pattern per first character after "rk_" (letters and digits).
#
#   include(darwin_exports.cmake) + rk_write_darwin_exports(FILE)
#   cmake -DOUT=FILE -P cmake/darwin_exports.cmake   (tests/platform)
function(rk_write_darwin_exports out)
  set(lines "")
  foreach(c a b c d e f g h i j k l m n o p q r s t u v w x y z
            A B C D E F G H I J K L M N O P Q R S T U V W X Y Z
            0 1 2 3 4 5 6 7 8 9)
    string(APPEND lines "_rk_${c}*\n")
  endforeach()
  file(WRITE ${out} "${lines}")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED OUT)
  rk_write_darwin_exports(${OUT})
endif()
