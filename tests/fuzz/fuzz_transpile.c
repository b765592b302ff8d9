/* fuzz_transpile.c - the transpiler must take any input in its stride.
 *
 * A libFuzzer target (tests/fuzz/libfuzzer/, `make fuzz`) and, through
 * replay.c, a plain program the regular build runs over regressions/ and
 * corpus/. Each input is NUL-terminated and handed to rk_transpile() for
 * every target and to rk_codegen_list_entries(); each result is freed. Any
 * crash, sanitizer report, hang or leak is a finding, and so is a broken
 * promise of include/rk/codegen.h, which aborts with "contract: ...":
 *
 *   - RK_OK comes with text (a NUL-terminated string) and any failure with
 *     NULL text and a non-empty rk_last_error();
 *   - without options->entry the only failures are RK_ERR_COMPILE (with a
 *     "fuzz.c:" location in rk_last_error() and a line in the diagnostic);
 *   - every entry point listed can be selected by name, alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/codegen.h"
#include "rk/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char kName[] = "fuzz.c";

static void contract(int ok, const char *what, rk_target_t target,
                     rk_status_t s) {
  if (ok) return;
  fprintf(stderr,
          "fuzz_transpile: contract: %s (target %s, status %s)\n"
          "rk_last_error(): %s\n",
          what, rk_target_name(target), rk_status_name(s), rk_last_error());
  abort();
}

/* Checks the outcome of one transpile call without options->entry. */
static void check_result(rk_target_t target, rk_status_t s, const char *text) {
  contract((s == RK_OK) == (text != NULL), "text is set exactly on success",
           target, s);
  if (s == RK_OK) {
    contract(strlen(text) > 0, "output text is not empty", target, s);
    return;
  }
  contract(rk_last_error()[0] != '\0', "a failure explains itself", target, s);
  contract(s == RK_ERR_COMPILE, "fails only with RK_ERR_COMPILE", target, s);
  if (s == RK_ERR_COMPILE)
    contract(strncmp(rk_last_error(), kName, sizeof kName - 1) == 0 &&
                 rk_last_error()[sizeof kName - 1] == ':',
             "a compile error starts with \"fuzz.c:\"", target, s);
}

/* Lists the entries; then selects each one by name, alone. */
static void check_entries(const char *source) {
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = kName;
  rk_entry_list_t *list = NULL;
  rk_diagnostic_t diag;
  rk_status_t s = rk_codegen_list_entries(source, &o, &list, &diag);
  contract((s == RK_OK) == (list != NULL), "a list is returned on success",
           RK_TARGET_C, s);
  if (s != RK_OK) {
    contract(s == RK_ERR_COMPILE, "listing fails only with RK_ERR_COMPILE",
             RK_TARGET_C, s);
    contract(diag.line >= 1 && diag.column >= 1 && diag.message[0] != '\0',
             "a compile error fills the diagnostic", RK_TARGET_C, s);
    contract(memchr(diag.message, '\0', sizeof diag.message) != NULL &&
                 memchr(diag.source_name, '\0', sizeof diag.source_name),
             "the diagnostic's strings are terminated", RK_TARGET_C, s);
    return;
  }
  contract(diag.line == 0, "no diagnostic on success", RK_TARGET_C, s);
  for (size_t i = 0; i < list->count; i++) {
    const rk_entry_t *e = &list->entries[i];
    contract(e->name != NULL && e->name[0] != '\0', "entries have names",
             RK_TARGET_C, s);
    for (size_t k = 0; k < e->param_count; k++)
      contract(e->params[k].name != NULL && e->params[k].type != NULL &&
                   strlen(e->params[k].type) > 0,
               "parameters have names and types", RK_TARGET_C, s);
    /* Selecting it alone, in the listing and in a printer. */
    rk_transpile_options_t one = o;
    one.entry = e->name;
    rk_entry_list_t *alone = NULL;
    s = rk_codegen_list_entries(source, &one, &alone, NULL);
    contract(s == RK_OK && alone != NULL && alone->count == 1 &&
                 strcmp(alone->entries[0].name, e->name) == 0,
             "a listed entry can be listed alone", RK_TARGET_C, s);
    rk_entry_list_destroy(alone);
    char *text = NULL;
    s = rk_transpile(source, RK_TARGET_CUDA, &one, &text);
    contract(s != RK_ERR_NOT_FOUND, "a listed entry can be selected",
             RK_TARGET_CUDA, s);
    contract((s == RK_OK) == (text != NULL), "text is set exactly on success",
             RK_TARGET_CUDA, s);
    rk_transpile_free(text);
  }
  rk_entry_list_destroy(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *source = malloc(size + 1);
  if (source == NULL) return 0;
  memcpy(source, data, size);
  source[size] = '\0';

  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = kName;
  for (int t = 0; t < RK_TARGET_COUNT_; t++) {
    char *text = NULL;
    rk_status_t s = rk_transpile(source, (rk_target_t)t, &o, &text);
    check_result((rk_target_t)t, s, text);
    rk_transpile_free(text);
  }
  check_entries(source);
  free(source);
  return 0;
}
