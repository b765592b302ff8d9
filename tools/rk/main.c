#include <stdio.h>
#include "rk/rk.h"
int main(void) { printf("rk %s\n", rk_version()); return 0; }
