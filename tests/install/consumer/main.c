/* A program outside the rk project that uses an installed rk: the public
 * header must compile on its own, and the library it links must agree with
 * it. Exits 0 when both checks hold, 1 otherwise (saying which failed). */
#include <rk/rk.h>
#include <stdio.h>
#include <string.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define HEADER_VERSION        \
  STRINGIFY(RK_VERSION_MAJOR) \
  "." STRINGIFY(RK_VERSION_MINOR) "." STRINGIFY(RK_VERSION_PATCH)

int main(void) {
  int failures = 0;

  const char *expected = HEADER_VERSION;
  const char *version = rk_version();
  if (version == NULL || strcmp(version, expected) != 0) {
    fprintf(stderr, "rk_version() is \"%s\"; the header says \"%s\"\n",
            version ? version : "(null)", expected);
    failures++;
  }

  const char *name = rk_status_name(RK_ERR_TIMEOUT);
  if (name == NULL || strcmp(name, "timeout") != 0) {
    fprintf(stderr,
            "rk_status_name(RK_ERR_TIMEOUT) is \"%s\", not \"timeout\"\n",
            name ? name : "(null)");
    failures++;
  }

  if (failures == 0) printf("rk %s: ok\n", version);
  return failures == 0 ? 0 : 1;
}
