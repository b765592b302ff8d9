/* model.c - the calibrated cost model: candidates, default rates,
 * opening a profile, predicting.
 *
 *   rk_cost_model_t *m;
 *   rk_cost_model_open(&m);                       // profile or defaults
 *   rk_op_desc_t d = {.op = RK_OP_ADD, .n = 1 << 20, .result_on_host = true};
 *   rk_prediction_t p[8]; size_t count, best;
 *   rk_cost_model_predict(m, &d, p, 8, &count, &best);
 *
 * Predicted time of a candidate = launch + transfer of inputs not resident
 * there + max(flops / rate, bytes / bandwidth) + read-back of the result
 * when the caller needs it on the host.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/log.h"
#include "base/sys.h"
#include "cost/cost.h"

const char *rk__cost_class_name(rk__cost_class_t cls) {
  static const char *const kNames[RK__CLASS_COUNT] = {
      "elementwise", "reduction", "transcendental", "matvec", "matmul"};
  return (unsigned)cls < RK__CLASS_COUNT ? kNames[cls] : "unknown";
}

/* ---- Default rates --------------------------------------------------------
 *
 * Deliberately plain numbers of a current desktop or server, used only when
 * there is no profile: they keep SIMD ahead of scalar code and a GPU behind
 * the CPU until the work is large enough to pay for the transfers. */

typedef struct default_rates {
  double launch_s, flop_rate, bandwidth;
} default_rates_t;

static const default_rates_t kScalarDefaults[RK__CLASS_COUNT] = {
    {2e-8, 1e9, 8e9}, /* elementwise */
    {2e-8, 1e9, 8e9}, /* reduction */
    {2e-8, 1e9, 8e9}, /* transcendental (exp = 10 flops) */
    {2e-8, 1e9, 8e9}, /* matvec */
    {2e-8, 1e9, 8e9}, /* matmul */
};
static const default_rates_t kSimdDefaults[RK__CLASS_COUNT] = {
    {5e-8, 8e9, 2e10},  {5e-8, 1.6e10, 2e10}, {5e-8, 1e10, 2e10},
    {5e-8, 1e10, 2e10}, {1e-6, 5e10, 2e10},
};
static const default_rates_t kGpuDefaults[RK__CLASS_COUNT] = {
    {2e-5, 5e12, 3e11}, {3e-5, 5e12, 3e11}, {2e-5, 5e12, 3e11},
    {2e-5, 5e12, 3e11}, {3e-5, 2e13, 3e11},
};
static const default_rates_t kSoftwareGpuDefaults[RK__CLASS_COUNT] = {
    {5e-5, 1e10, 1e10}, {8e-5, 1e10, 1e10}, {5e-5, 5e9, 1e10},
    {5e-5, 1e10, 1e10}, {8e-5, 2e10, 1e10},
};

const rk__cost_curve_t *rk__cost_curve_for(const rk__cost_target_t *t,
                                           rk_op_t op) {
  if ((unsigned)op < RK_OP_COUNT_ && t->ops[op].count > 0) return &t->ops[op];
  return &t->curves[rk__op_class(op)];
}

void rk__cost_target_defaults(rk__cost_target_t *t) {
  memset(t->ops, 0, sizeof t->ops);
  const default_rates_t *rates = kScalarDefaults;
  if (t->target.kind == RK_EXEC_SIMD) rates = kSimdDefaults;
  if (t->target.kind == RK_EXEC_GPU)
    rates = t->software ? kSoftwareGpuDefaults : kGpuDefaults;
  for (int c = 0; c < RK__CLASS_COUNT; ++c) {
    rk__cost_curve_t *curve = &t->curves[c];
    memset(curve, 0, sizeof *curve);
    curve->launch_s = rates[c].launch_s;
    curve->count = 1;
    curve->points[0].bytes = 1 << 20;
    curve->points[0].flop_rate = rates[c].flop_rate;
    curve->points[0].bandwidth = rates[c].bandwidth;
  }
  if (t->target.kind == RK_EXEC_GPU) {
    double lat = t->software ? 5e-6 : 1e-5, bw = t->software ? 5e9 : 1.2e10;
    t->h2d.latency_s = t->d2h.latency_s = lat;
    t->h2d.bandwidth = t->d2h.bandwidth = bw;
  } else {
    memset(&t->h2d, 0, sizeof t->h2d);
    memset(&t->d2h, 0, sizeof t->d2h);
  }
}

void rk__cost_curve_rates(const rk__cost_curve_t *curve, double bytes,
                          double *out_flop_rate, double *out_bandwidth) {
  if (curve->count == 0) {
    *out_flop_rate = 1e9;
    *out_bandwidth = 8e9;
    return;
  }
  const rk__cost_point_t *p = curve->points;
  size_t n = curve->count;
  if (n == 1 || bytes <= p[0].bytes) {
    *out_flop_rate = p[0].flop_rate;
    *out_bandwidth = p[0].bandwidth;
    return;
  }
  if (bytes >= p[n - 1].bytes) {
    *out_flop_rate = p[n - 1].flop_rate;
    *out_bandwidth = p[n - 1].bandwidth;
    return;
  }
  size_t i = 0;
  while (i + 1 < n && p[i + 1].bytes <= bytes) ++i;
  double t =
      (log(bytes) - log(p[i].bytes)) / (log(p[i + 1].bytes) - log(p[i].bytes));
  *out_flop_rate = exp(log(p[i].flop_rate) +
                       t * (log(p[i + 1].flop_rate) - log(p[i].flop_rate)));
  *out_bandwidth = exp(log(p[i].bandwidth) +
                       t * (log(p[i + 1].bandwidth) - log(p[i].bandwidth)));
}

/* ---- The machine ----------------------------------------------------------
 */

static void read_cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    if (rk__cpu_brand(out, cap))
      for (char *c = out; *c; ++c)
        if (*c == ';') *c = ','; /* ';' separates fields */
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, f)) {
    /* x86: "model name"; ARM: "Model" or "Hardware" or "CPU part". */
    if (strncmp(line, "model name", 10) == 0 ||
        strncmp(line, "Hardware", 8) == 0 || strncmp(line, "Model", 5) == 0) {
      char *colon = strchr(line, ':');
      if (!colon) continue;
      char *v = colon + 1;
      while (*v == ' ' || *v == '\t') ++v;
      size_t len = strcspn(v, "\r\n");
      /* ';' separates fields of the description. */
      for (size_t i = 0; i < len; ++i)
        if (v[i] == ';') v[i] = ',';
      snprintf(out, cap, "%.*s", (int)len, v);
      break;
    }
  }
  fclose(f);
}

static rk__cost_target_t *add_target(rk__machine_t *m) {
  if (m->ntargets >= RK__COST_MAX_TARGETS) return NULL;
  rk__cost_target_t *t = &m->targets[m->ntargets++];
  memset(t, 0, sizeof *t);
  return t;
}

static void probe_gpus(rk__machine_t *m, char *desc, size_t cap) {
  static const rk_backend_kind_t kKinds[] = {
      RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL};
  size_t used = strlen(desc);
  bool any = false;
  for (size_t k = 0; k < sizeof kKinds / sizeof kKinds[0]; ++k) {
    rk_backend_t *be = NULL;
    if (rk_backend_open(kKinds[k], &be) != RK_OK) continue;
    int count = rk_backend_device_count(be);
    for (int d = 0; d < count; ++d) {
      rk_device_info_t info;
      if (rk_backend_device_info(be, d, &info) != RK_OK) continue;
      rk__cost_target_t *t = add_target(m);
      if (!t) break;
      snprintf(t->key, sizeof t->key, "%s%d", rk_backend_kind_name(kKinds[k]),
               d);
      t->target.kind = RK_EXEC_GPU;
      t->target.isa = RK_ISA_NONE;
      t->target.backend = kKinds[k];
      t->target.device = d;
      snprintf(t->device_name, sizeof t->device_name, "%s", info.name);
      for (char *c = t->device_name; *c; ++c)
        if (*c == ';' || *c == '\n') *c = ',';
      t->software = (info.caps & RK_CAP_SOFTWARE) != 0;
      t->candidate = !t->software;
      rk__cost_target_defaults(t);
      if (used < cap)
        used += (size_t)snprintf(desc + used, cap - used, "%s%s=%s%s",
                                 any ? ", " : "; gpu=", t->key, t->device_name,
                                 t->software ? " (software)" : "");
      any = true;
    }
    rk_backend_destroy(be);
  }
}

static void add_cpu_target(rk__machine_t *m, const char *key,
                           rk_exec_kind_t kind, rk_isa_t isa) {
  rk__cost_target_t *t = add_target(m);
  if (!t) return;
  snprintf(t->key, sizeof t->key, "%s", key);
  t->target.kind = kind;
  t->target.isa = isa;
  size_t len = strnlen(m->cpu_model, sizeof t->device_name - 1);
  memcpy(t->device_name, m->cpu_model, len);
  t->device_name[len] = '\0';
  t->candidate = true;
  rk__cost_target_defaults(t);
}

/* The hardware does not change while a process runs: the CPU is probed
 * once, the GPU backends (opening each is slow: tens of milliseconds, more
 * with a real driver) once when a model first needs them, and each model
 * gets a copy. */
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_full_once = PTHREAD_ONCE_INIT;
static rk__machine_t g_cpu_machine, g_full_machine;

static void fingerprint(rk__machine_t *m) {
  rk__hash_t h;
  rk__hash_init(&h);
  rk__hash_str(&h, m->description);
  rk__hash_hex(&h, m->fingerprint);
}

static void probe_cpu(void) {
  rk__machine_t *m = &g_cpu_machine;
  memset(m, 0, sizeof *m);
  read_cpu_model(m->cpu_model, sizeof m->cpu_model);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  m->cpus = online > 0 ? (int)online : 1;
  m->isa = rk_isa_best();
  snprintf(m->description, sizeof m->description, "cpu=%.127s; cpus=%d; isa=%s",
           m->cpu_model, m->cpus, rk_isa_name(m->isa));
  add_cpu_target(m, "scalar", RK_EXEC_SCALAR, RK_ISA_NONE);
  if (m->isa != RK_ISA_NONE) add_cpu_target(m, "simd", RK_EXEC_SIMD, m->isa);
  fingerprint(m);
}

static void probe_full(void) {
  pthread_once(&g_cpu_once, probe_cpu);
  rk__machine_t *m = &g_full_machine;
  memcpy(m, &g_cpu_machine, sizeof *m);
  /* Backends that are absent are expected: keep the caller's message. */
  char *saved = rk__error_save();
  probe_gpus(m, m->description, sizeof m->description);
  rk__error_restore(saved);
  fingerprint(m);
}

void rk__machine_probe(rk__machine_t *m, bool include_software) {
  pthread_once(&g_full_once, probe_full);
  memcpy(m, &g_full_machine, sizeof *m);
  for (size_t i = 0; i < m->ntargets; ++i)
    if (m->targets[i].software) m->targets[i].candidate = include_software;
}

void rk__machine_probe_cpu(rk__machine_t *m) {
  pthread_once(&g_cpu_once, probe_cpu);
  memcpy(m, &g_cpu_machine, sizeof *m);
}

/* ---- Opening --------------------------------------------------------------
 */

void rk_cost_model_options_init(rk_cost_model_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
}

static bool env_true(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 &&
         strcasecmp(v, "false") != 0 && strcasecmp(v, "off") != 0;
}

/* Profiles are a few KiB; anything far larger is not one. */
enum { kMaxProfileBytes = 4 << 20 };

/* Reads the profile at path into *out_text (malloc'd). Anything that is not
 * a readable regular file of at most kMaxProfileBytes is RK_ERR_NOT_FOUND
 * with the reason in note; RK_ERR_OUT_OF_MEMORY is the only failure. */
static rk_status_t read_profile(const char *path, char **out_text, char *note,
                                size_t cap) {
  *out_text = NULL;
  struct stat st;
  if (stat(path, &st) == 0 &&
      (!S_ISREG(st.st_mode) || st.st_size > kMaxProfileBytes)) {
    /* a device, a directory, a huge file */
    snprintf(note, cap,
             "profile '%s' is corrupt: not a regular file of at most %d bytes",
             path, kMaxProfileBytes);
    return RK_ERR_NOT_FOUND;
  }
  char *saved = rk__error_save();
  rk_status_t s = rk__read_file(path, out_text, NULL);
  rk__error_restore(saved);
  if (s == RK_ERR_OUT_OF_MEMORY)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cost_model_open: out of memory");
  if (s != RK_OK) {
    snprintf(note, cap, "no profile at '%s'", path);
    return RK_ERR_NOT_FOUND;
  }
  return RK_OK;
}

/* Parses text, read from path, into the model; the note says why not. */
static void load_profile(rk_cost_model_t *model, const char *path,
                         const char *text) {
  char why[400];
  if (rk__cost_profile_parse(model, text, why, sizeof why))
    model->from_profile = true;
  else
    snprintf(model->note, sizeof model->note, "profile '%s' %s", path, why);
}

/* ---- CPU-only models -------------------------------------------------------
 *
 * A model opened with cpu_only opens no GPU backend, so it cannot know the
 * machine's fingerprint. Its profile is still one `rk calibrate` wrote for
 * the whole machine: the newest one in the cost directory whose machine
 * line names this CPU (model, count and ISA), or the file named by
 * RK_COST_PROFILE or the options. Its GPU entries are read as written but
 * are not candidates. */

/* The value of the profile's "machine" line into out; false if none. */
static bool machine_line(const char *text, char *out, size_t cap) {
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len > 8 && strncmp(line, "machine", 7) == 0 &&
        (line[7] == ' ' || line[7] == '\t')) {
      const char *v = line + 8;
      len -= 8;
      while (len > 0 && (*v == ' ' || *v == '\t')) ++v, --len;
      while (len > 0 &&
             (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\r'))
        --len;
      if (len >= cap) return false;
      memcpy(out, v, len);
      out[len] = '\0';
      return true;
    }
    line = end ? end + 1 : NULL;
  }
  return false;
}

/* Adds a non-candidate GPU target for every "<backend><N>." key of the
 * profile text that the machine does not have yet. */
static void add_profile_gpus(rk__machine_t *m, const char *text) {
  static const rk_backend_kind_t kKinds[] = {
      RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL};
  for (const char *line = text; line && *line;) {
    while (*line == ' ' || *line == '\t') ++line;
    size_t word = strspn(line, "abcdefghijklmnopqrstuvwxyz0123456789");
    if (word > 0 && word < sizeof m->targets[0].key && line[word] == '.') {
      size_t letters = strspn(line, "abcdefghijklmnopqrstuvwxyz");
      for (size_t k = 0; k < sizeof kKinds / sizeof kKinds[0]; ++k) {
        const char *name = rk_backend_kind_name(kKinds[k]);
        if (letters == 0 || letters == word || strlen(name) != letters ||
            strncmp(line, name, letters) != 0)
          continue;
        bool known = false;
        for (size_t i = 0; i < m->ntargets; ++i)
          if (strlen(m->targets[i].key) == word &&
              strncmp(m->targets[i].key, line, word) == 0)
            known = true;
        rk__cost_target_t *t = known ? NULL : add_target(m);
        if (!t) break;
        memcpy(t->key, line, word);
        t->key[word] = '\0';
        t->target.kind = RK_EXEC_GPU;
        t->target.isa = RK_ISA_NONE;
        t->target.backend = kKinds[k];
        t->target.device = atoi(line + letters);
        snprintf(t->device_name, sizeof t->device_name, "not probed");
        t->candidate = false;
        rk__cost_target_defaults(t);
      }
    }
    const char *end = strchr(line, '\n');
    line = end ? end + 1 : NULL;
  }
}

/* Loads a whole machine's profile into a CPU-only model when it was
 * measured on this CPU. False with the reason in why otherwise (the model
 * unchanged). */
static bool load_cpu_profile(rk_cost_model_t *model, const char *text,
                             char *why, size_t cap) {
  char line[sizeof model->machine.description];
  if (!machine_line(text, line, sizeof line)) {
    snprintf(why, cap, "is corrupt: no 'machine' line");
    return false;
  }
  const char *cpu = model->machine.description;
  size_t len = strlen(cpu);
  if (strncmp(line, cpu, len) != 0 || (line[len] != '\0' && line[len] != ';')) {
    snprintf(why, cap,
             "was measured on another CPU ('%.200s'; this one: %.150s)", line,
             cpu);
    return false;
  }
  rk__machine_t *saved = malloc(sizeof *saved);
  if (!saved) {
    snprintf(why, cap, "could not be read: out of memory");
    return false;
  }
  memcpy(saved, &model->machine, sizeof *saved);
  add_profile_gpus(&model->machine, text);
  /* The fingerprint the profile must carry: its own machine's. */
  snprintf(model->machine.description, sizeof model->machine.description, "%s",
           line);
  fingerprint(&model->machine);
  bool ok = rk__cost_profile_parse(model, text, why, cap);
  /* What this model knows of the machine is its CPU. */
  memcpy(model->machine.description, saved->description,
         sizeof saved->description);
  if (!ok) memcpy(&model->machine, saved, sizeof *saved);
  free(saved);
  return ok;
}

typedef struct profile_file {
  char name[64];
  time_t mtime;
} profile_file_t;

static int newest_first(const void *a, const void *b) {
  const profile_file_t *x = a, *y = b;
  return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : 0;
}

/* The newest profile of the cost directory measured on this CPU. */
static rk_status_t find_cpu_profile(rk_cost_model_t *model) {
  enum { kMaxFiles = 64 };
  char root[sizeof model->profile_path], dir[sizeof model->profile_path];
  if (rk__cache_root(root, sizeof root) != RK_OK ||
      snprintf(dir, sizeof dir, "%s/cost", root) >= (int)sizeof dir) {
    snprintf(model->note, sizeof model->note,
             "no cache directory for a profile (set RK_CACHE_DIR or HOME)");
    return RK_OK;
  }
  snprintf(model->profile_path, sizeof model->profile_path, "%s", dir);
  snprintf(model->note, sizeof model->note,
           "no profile measured on this CPU in '%s'", dir);
  DIR *d = opendir(dir);
  if (!d) return RK_OK;
  profile_file_t *files = calloc(kMaxFiles, sizeof *files);
  if (!files) {
    closedir(d);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cost_model_open: out of memory");
  }
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < kMaxFiles) {
    /* <32 hex digits>.profile, as rk__cost_default_path names them. */
    if (strlen(e->d_name) != 40 ||
        strspn(e->d_name, "0123456789abcdef") != 32 ||
        strcmp(e->d_name + 32, ".profile") != 0)
      continue;
    char path[sizeof model->profile_path];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >=
            (int)sizeof path ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    memcpy(files[n].name, e->d_name, 41); /* 40 characters, checked above */
    files[n].mtime = st.st_mtime;
    ++n;
  }
  closedir(d);
  qsort(files, n, sizeof *files, newest_first);
  rk_status_t s = RK_OK;
  for (size_t i = 0; i < n && !model->from_profile && s == RK_OK; ++i) {
    char fp[33], path[sizeof model->profile_path];
    memcpy(fp, files[i].name, 32);
    fp[32] = '\0';
    /* The same checks as for this machine's own profile (owner, mode). */
    char *saved_error = rk__error_save();
    rk_status_t ok = rk__cost_default_path(fp, path, sizeof path);
    rk__error_restore(saved_error);
    if (ok != RK_OK) continue;
    char *text = NULL, ignored[64];
    s = read_profile(path, &text, ignored, sizeof ignored);
    if (s == RK_ERR_NOT_FOUND) {
      s = RK_OK;
      continue;
    }
    char why[400];
    if (s == RK_OK && load_cpu_profile(model, text, why, sizeof why)) {
      model->from_profile = true;
      model->note[0] = '\0';
      snprintf(model->profile_path, sizeof model->profile_path, "%s", path);
    }
    free(text);
  }
  free(files);
  return s;
}

static rk_status_t open_cpu_only(rk_cost_model_t *model, const char *path) {
  rk__machine_probe_cpu(&model->machine);
  if (!path) return find_cpu_profile(model);
  snprintf(model->profile_path, sizeof model->profile_path, "%s", path);
  char *text = NULL;
  rk_status_t s = read_profile(path, &text, model->note, sizeof model->note);
  if (s == RK_ERR_NOT_FOUND) return RK_OK;
  if (s != RK_OK) return s;
  char why[400];
  if (load_cpu_profile(model, text, why, sizeof why))
    model->from_profile = true;
  else
    snprintf(model->note, sizeof model->note, "profile '%s' %s", path, why);
  free(text);
  return RK_OK;
}

/* The library prints nothing: a model on default rates is logged once per
 * process (RK_LOG=warn shows it), and callers read the same text from
 * rk_cost_model_info (note, env_note) to show it themselves. */
static atomic_int g_logged_defaults, g_logged_env;

static void log_once(const rk_cost_model_t *model) {
  if (rk__log_level() < RK__LOG_WARN) return;
  if (!model->from_profile && !atomic_exchange(&g_logged_defaults, 1))
    rk__log(RK__LOG_WARN,
            "the cost model uses default rates: %s (run `rk calibrate` to "
            "measure this machine)",
            model->note);
  if (model->env_note[0] && !atomic_exchange(&g_logged_env, 1))
    rk__log(RK__LOG_WARN, "%s", model->env_note);
}

rk_status_t rk_cost_model_open_with(const rk_cost_model_options_t *options,
                                    rk_cost_model_t **out_model) {
  if (!out_model)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_open: out_model must not be NULL");
  rk_cost_model_options_t defaults;
  rk_cost_model_options_init(&defaults);
  if (!options) options = &defaults;
  rk_cost_model_t *model = calloc(1, sizeof *model);
  if (!model)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cost_model_open: out of memory");
  model->threads = 0;

  const char *env_path = getenv("RK_COST_PROFILE");
  const char *given = options->profile_path && *options->profile_path
                          ? options->profile_path
                          : (env_path && *env_path ? env_path : NULL);
  rk_status_t s = RK_OK;
  if (options->cpu_only) {
    s = open_cpu_only(model, given);
  } else {
    bool software = options->include_software || env_true("RK_COST_SOFTWARE");
    rk__machine_probe(&model->machine, software);
    if (given) {
      snprintf(model->profile_path, sizeof model->profile_path, "%s", given);
    } else {
      char *saved = rk__error_save();
      if (rk__cost_default_path(model->machine.fingerprint, model->profile_path,
                                sizeof model->profile_path) != RK_OK)
        model->profile_path[0] = '\0';
      rk__error_restore(saved);
    }
    if (!model->profile_path[0]) {
      snprintf(model->note, sizeof model->note,
               "no cache directory for a profile (set RK_CACHE_DIR or HOME)");
    } else {
      char *text = NULL;
      s = read_profile(model->profile_path, &text, model->note,
                       sizeof model->note);
      if (s == RK_OK) load_profile(model, model->profile_path, text);
      if (s == RK_ERR_NOT_FOUND) s = RK_OK;
      free(text);
    }
  }
  if (s != RK_OK) {
    free(model);
    return s;
  }
  model->overrides = rk__cost_apply_env(model);
  if (!options->quiet) log_once(model);
  *out_model = model;
  return RK_OK;
}

rk_status_t rk_cost_model_open(rk_cost_model_t **out_model) {
  return rk_cost_model_open_with(NULL, out_model);
}

void rk_cost_model_destroy(rk_cost_model_t *model) { free(model); }

rk_status_t rk_cost_model_info(const rk_cost_model_t *model,
                               rk_cost_model_info_t *out_info) {
  if (!model || !out_info)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_info: model and out_info must not be NULL");
  memset(out_info, 0, sizeof *out_info);
  out_info->from_profile = model->from_profile;
  out_info->profile_path = model->profile_path;
  out_info->note = model->note;
  out_info->fingerprint = model->machine.fingerprint;
  out_info->machine = model->machine.description;
  out_info->env_overrides = model->overrides;
  out_info->env_note = model->env_note;
  for (size_t i = 0; i < model->machine.ntargets; ++i)
    if (model->machine.targets[i].candidate) ++out_info->candidate_count;
  return RK_OK;
}

rk_status_t rk_cost_model_format(const rk_cost_model_t *model,
                                 char **out_text) {
  if (!model || !out_text)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_format: model and out_text must not be NULL");
  char *text = rk__cost_profile_format(model, NULL);
  if (!text)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cost_model_format: out of memory");
  *out_text = text;
  return RK_OK;
}

/* ---- Predicting -----------------------------------------------------------
 */

static const rk__cost_target_t *first_gpu(const rk_cost_model_t *model) {
  for (size_t i = 0; i < model->machine.ntargets; ++i) {
    const rk__cost_target_t *t = &model->machine.targets[i];
    if (t->candidate && t->target.kind == RK_EXEC_GPU) return t;
  }
  return NULL;
}

static double link_time(const rk__cost_link_t *link, double bytes) {
  if (bytes <= 0.0) return 0.0;
  return link->latency_s + bytes / link->bandwidth;
}

static void predict_one(const rk_cost_model_t *model,
                        const rk__cost_target_t *t, const rk_op_desc_t *desc,
                        rk_prediction_t *out) {
  uint64_t in_bytes, out_bytes;
  rk__op_io_bytes(desc, &in_bytes, &out_bytes);
  double bytes = (double)rk_op_bytes(desc), flops = (double)rk_op_flops(desc);
  const rk__cost_curve_t *curve = rk__cost_curve_for(t, desc->op);
  double flop_rate, bandwidth;
  rk__cost_curve_rates(curve, bytes, &flop_rate, &bandwidth);

  memset(out, 0, sizeof *out);
  out->target = t->target;
  out->launch_s = curve->launch_s;
  double by_flops = flops / flop_rate, by_bytes = bytes / bandwidth;
  out->compute_s = by_flops > by_bytes ? by_flops : by_bytes;
  if (t->target.kind == RK_EXEC_GPU) {
    if (desc->inputs == RK_RESIDENT_HOST)
      out->transfer_s = link_time(&t->h2d, (double)in_bytes);
    if (desc->result_on_host)
      out->readback_s = link_time(&t->d2h, (double)out_bytes);
  } else if (desc->inputs == RK_RESIDENT_DEVICE) {
    /* The operands sit on a GPU: the CPU must fetch them first, and put
     * the result back there unless the caller wants it on the host. */
    const rk__cost_target_t *gpu = first_gpu(model);
    if (gpu) {
      out->transfer_s = link_time(&gpu->d2h, (double)in_bytes);
      if (!desc->result_on_host)
        out->readback_s = link_time(&gpu->h2d, (double)out_bytes);
    }
  }
  out->total_s =
      out->launch_s + out->transfer_s + out->compute_s + out->readback_s;
  out->measured = curve->measured;
}

rk_status_t rk_cost_model_predict(const rk_cost_model_t *model,
                                  const rk_op_desc_t *desc,
                                  rk_prediction_t *out, size_t capacity,
                                  size_t *count, size_t *best) {
  if (!model || !desc || !out || !count || !best)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_predict: model, desc, out, count and best "
                    "must not be NULL");
  if (capacity == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_predict: capacity is 0");
  if ((unsigned)desc->op >= RK_OP_COUNT_)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_predict: %d is not an operation",
                    (int)desc->op);
  if (desc->inputs != RK_RESIDENT_HOST && desc->inputs != RK_RESIDENT_DEVICE)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_model_predict: %d is not a residency",
                    (int)desc->inputs);
  size_t n = 0, b = 0;
  for (size_t i = 0; i < model->machine.ntargets && n < capacity; ++i) {
    const rk__cost_target_t *t = &model->machine.targets[i];
    if (!t->candidate) continue;
    predict_one(model, t, desc, &out[n]);
    if (out[n].total_s < out[b].total_s) b = n;
    ++n;
  }
  *count = n;
  *best = b;
  return RK_OK;
}
