/* tool.h - what the files of the `rk` command share.
 *
 * Each subcommand lives in its own cmd_<name>.c and exports one
 * tool_command_t; main.c lists them, dispatches to `run` and prints `help`.
 * A new command is a new file plus one line in main.c's table.
 *
 *   static int run(int argc, char **argv);   // argv[0] is the command name
 *   static void help(FILE *out);
 *   const tool_command_t tool_cmd_devices = {"devices", "summary", run, help};
 *
 * Exit codes are the same for every command: TOOL_EXIT_OK, TOOL_EXIT_FAILURE
 * when the work itself failed, TOOL_EXIT_USAGE for a bad command line.
 */
#ifndef RK_TOOL_H_
#define RK_TOOL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rk/backend.h"

enum {
  TOOL_EXIT_OK = 0,
  TOOL_EXIT_FAILURE = 1,
  TOOL_EXIT_USAGE = 2,
};

typedef struct tool_command {
  const char *name;    /* "devices" */
  const char *summary; /* one line for `rk --help` */
  /* Runs the command; argv[0] is the command's name. Returns a TOOL_EXIT_*
   * code. */
  int (*run)(int argc, char **argv);
  /* Prints the command's full help (usage, options, example, output). */
  void (*help)(FILE *out);
} tool_command_t;

extern const tool_command_t tool_cmd_devices;
extern const tool_command_t tool_cmd_demo;
extern const tool_command_t tool_cmd_transpile;
extern const tool_command_t tool_cmd_select;
extern const tool_command_t tool_cmd_calibrate;
extern const tool_command_t tool_cmd_cache;
extern const tool_command_t tool_cmd_version;
extern const tool_command_t tool_cmd_cluster;
extern const tool_command_t tool_cmd_bench;

/* `rk demo` without a subcommand (demo_actors.c): runs and prints the
 * actor comparison on `backend`. Returns a TOOL_EXIT_* code. */
int tool_demo_actors(rk_backend_t *backend, bool json, bool quick);

/* `rk demo halo` (demo_halo.c): tile actors exchanging halos through K2K
 * channels against one stencil kernel per step; `split`: half the tiles in
 * a second process (this program again, run with member_of: the hub's
 * address), the ports across the cut through the cluster. */
int tool_demo_halo(rk_backend_t *backend, bool json, bool quick, bool split,
                   const char *member_of);

/* ---- Helpers (util.c) --------------------------------------------------- */

/* Prints "rk <command>: <message>" and a pointer at the help to stderr and
 * returns TOOL_EXIT_USAGE, so callers can `return tool_usage_error(...)`.
 * `command` may be NULL for errors before a command was chosen. */
int tool_usage_error(const char *command, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether argv[i] is "-h" or "--help". */
bool tool_is_help(const char *arg);

/* Matches option `name` ("--n") at argv[*i], written as "--n VALUE" or
 * "--n=VALUE". Returns false if argv[*i] is another argument. On a match,
 * *out_value is the value, or NULL when it is missing (a usage error for the
 * caller to report), and *i is advanced past a separate value. */
bool tool_match_option(int argc, char **argv, int *i, const char *name,
                       const char **out_value);

/* Seconds on a monotonic clock, for measuring intervals. */
double tool_now_seconds(void);

/* Seconds as text with the unit that keeps 3-4 significant digits ("850.0
 * ns", "2.63 ms", "1.204 s"); "0" for zero and "overflow" for a time too
 * large for a double. Every time a command prints as text goes through
 * here. */
void tool_time_text(char *out, size_t cap, double seconds);

/* Writes `s` to `out` as a JSON string literal, quotes included: quotes,
 * backslashes and control characters escaped, bytes that are not valid UTF-8
 * replaced by U+FFFD. NULL is written as null. */
void tool_json_string(FILE *out, const char *s);

/* Writes `v` as a JSON number with 6 significant digits ("1.5e-07"), or
 * null when it is not finite (JSON has no inf or nan). Every double a
 * command prints as JSON goes through here. */
void tool_json_number(FILE *out, double v);

#endif /* RK_TOOL_H_ */
