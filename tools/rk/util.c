/* util.c - small helpers shared by the commands of `rk` (see tool.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

int tool_usage_error(const char *command, const char *format, ...) {
  if (command)
    fprintf(stderr, "rk %s: ", command);
  else
    fputs("rk: ", stderr);
  va_list ap;
  va_start(ap, format);
  vfprintf(stderr, format, ap);
  va_end(ap);
  if (command)
    fprintf(stderr, "\nRun 'rk %s --help' for its usage.\n", command);
  else
    fprintf(stderr, "\nRun 'rk --help' for usage.\n");
  return TOOL_EXIT_USAGE;
}

bool tool_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool tool_match_option(int argc, char **argv, int *i, const char *name,
                       const char **out_value) {
  const char *arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0) return false;
  if (arg[len] == '=') {
    *out_value = arg + len + 1;
    return true;
  }
  if (arg[len] != '\0') return false; /* "--nope" is not "--n" */
  if (*i + 1 < argc) {
    *i += 1;
    *out_value = argv[*i];
  } else {
    *out_value = NULL;
  }
  return true;
}

double tool_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Length of the valid UTF-8 sequence at `p`, or 0 if it is not one. */
static size_t utf8_length(const unsigned char *p) {
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
  if (p[0] >= 0xc2 && p[0] <= 0xdf) {
    n = 2;
  } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
    n = 3;
    if (p[0] == 0xe0) lo = 0xa0; /* overlong */
    if (p[0] == 0xed) hi = 0x9f; /* surrogates */
  } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
    n = 4;
    if (p[0] == 0xf0) lo = 0x90; /* overlong */
    if (p[0] == 0xf4) hi = 0x8f; /* beyond U+10FFFF */
  } else {
    return 0;
  }
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((p[k] & 0xc0) != 0x80) return 0; /* also stops at the '\0' */
  return n;
}

void tool_json_string(FILE *out, const char *s) {
  if (!s) {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
    } else if (c == '\n') {
      fputs("\\n", out);
    } else if (c == '\r') {
      fputs("\\r", out);
    } else if (c == '\t') {
      fputs("\\t", out);
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c);
    } else if (c >= 0x80) {
      size_t n = utf8_length(p);
      if (n == 0) {
        fputs("\\ufffd", out);
        p += 1;
      } else {
        fwrite(p, 1, n, out);
        p += n;
      }
      continue;
    } else {
      fputc(c, out);
    }
    p += 1;
  }
  fputc('"', out);
}

void tool_json_number(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.6g", v);
  else
    fputs("null", out);
}

void tool_time_text(char *out, size_t cap, double s) {
  if (!isfinite(s))
    snprintf(out, cap, "overflow");
  else if (s == 0)
    snprintf(out, cap, "0");
  else if (s < 1e-6)
    snprintf(out, cap, "%.1f ns", s * 1e9);
  else if (s < 1e-3)
    snprintf(out, cap, "%.2f us", s * 1e6);
  else if (s < 1.0)
    snprintf(out, cap, "%.2f ms", s * 1e3);
  else
    snprintf(out, cap, "%.3f s", s);
}
