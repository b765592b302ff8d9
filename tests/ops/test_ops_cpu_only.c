/* An ops handle that may not use a GPU (gpu_backends 0) opens no GPU
 * backend: no vendor library is loaded into the process, nothing is
 * printed, and the calibrated policy still reads the CPU rates of a
 * profile measured on this CPU. Without a profile the report says the
 * prediction used default rates (rk prints no warning). */
#define RK_TEST_IMPLEMENTATION
#include <string.h>
#include <sys/stat.h>

#include "base/sys.h"
#include "rk_test.h"

/* The first GPU vendor library mapped into this process, or NULL. */
static const char *gpu_library_loaded(char *line, size_t cap) {
  static const char *const kNames[] = {"libOpenCL", "wgpu_native",
                                       "libvulkan", "libcuda",
                                       "libnvrtc",  "webgpu_dawn"};
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return NULL;
  const char *found = NULL;
  while (!found && fgets(line, (int)cap, f))
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; ++i)
      if (strstr(line, kNames[i])) found = kNames[i];
  fclose(f);
  return found;
}

static rk_ops_t *create_cpu_only(void) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.gpu_backends = 0;
  rk_ops_t *ops = NULL;
  char err[1024] = "";
  rk_test_capture_begin();
  rk_status_t s = rk_ops_create(&o, &ops);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK_OK(s);
  CHECK(err[0] == '\0', "rk_ops_create printed '%s'", err);
  return s == RK_OK ? ops : NULL;
}

static rk_op_report_t axpy(rk_ops_t *ops) {
  float x[64], y[64];
  for (int i = 0; i < 64; ++i) x[i] = y[i] = (float)i;
  rk_op_report_t r;
  memset(&r, 0, sizeof r);
  CHECK_OK(rk_ops_axpy(ops, 64, 2.0f, x, y, &r));
  CHECK(y[10] == 30.0f, "axpy: y[10] = %g", y[10]);
  return r;
}

/* Writes a profile for `machine` under `dir` named by its fingerprint:
 * scalar element-wise ops far faster than anything else, and an OpenCL
 * device that is not on this machine. */
static void write_profile(const char *dir, const char *machine) {
  rk__hash_t h;
  rk__hash_init(&h);
  rk__hash_str(&h, machine);
  char fp[33], path[1024];
  rk__hash_hex(&h, fp);
  snprintf(path, sizeof path, "%s/%s.profile", dir, fp);
  FILE *f = fopen(path, "w");
  if (!CHECK(f != NULL, "cannot write %s", path)) return;
  fprintf(f,
          "rk-cost-profile 1\n"
          "fingerprint %s\n"
          "machine %s\n"
          "scalar.elementwise.launch = 1e-12\n"
          "scalar.elementwise.rate = 1048576 1e15 1e15\n"
          "opencl0.elementwise.launch = 1e-5\n"
          "opencl0.elementwise.rate = 1048576 1e12 1e11\n"
          "opencl0.h2d = 1e-05 1e+10\n"
          "end\n",
          fp, machine);
  fclose(f);
}

int main(void) {
  const char *cache = rk_test_use_temp_cache();
  unsetenv("RK_COST_PROFILE");
  unsetenv("RK_LOG");
  char line[512];

  /* No profile: default rates, said in the report. */
  rk_ops_t *ops = create_cpu_only();
  if (!ops) return rk_test_finish("ops_cpu_only");
  rk_op_report_t r = axpy(ops);
  CHECK(r.has_prediction && r.default_rates,
        "no profile: has_prediction %d default_rates %d", r.has_prediction,
        r.default_rates);
  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(rk_ops_cost_model(ops), &info));
  CHECK(!info.from_profile && rk_test_contains(info.note, "this CPU"),
        "note: '%s'", info.note);
  CHECK(!strstr(info.machine, "gpu="), "machine '%s' has GPUs", info.machine);
  CHECK(info.candidate_count >= 1, "%zu candidates", info.candidate_count);
  char cpu[768];
  snprintf(cpu, sizeof cpu, "%s", info.machine);
  rk_ops_destroy(ops);

  /* A profile of this CPU (with a GPU this process never looked for) and a
   * newer one of another CPU: the first is read, for its CPU rates. */
  char dir[1024], machine[1024];
  snprintf(dir, sizeof dir, "%s/cost", cache);
  CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
  snprintf(machine, sizeof machine, "%s; gpu=opencl0=Some GPU", cpu);
  write_profile(dir, machine);
  sleep(1); /* a later modification time */
  write_profile(dir, "cpu=Another CPU; cpus=3; isa=none");
  ops = create_cpu_only();
  if (ops) {
    r = axpy(ops);
    CHECK(r.has_prediction && !r.default_rates,
          "profile: has_prediction %d default_rates %d", r.has_prediction,
          r.default_rates);
    CHECK(r.target.kind == RK_EXEC_SCALAR,
          "the profile's scalar rates were not used: ran %s",
          rk_exec_kind_name(r.target.kind));
    CHECK_OK(rk_cost_model_info(rk_ops_cost_model(ops), &info));
    CHECK(info.from_profile, "profile not read: %s", info.note);
    CHECK(strstr(info.profile_path, dir) == info.profile_path, "read '%s'",
          info.profile_path);
    rk_op_desc_t d = {.op = RK_OP_ADD, .n = 1000, .result_on_host = true};
    rk_prediction_t p[8];
    size_t count = 0, best = 0;
    CHECK_OK(
        rk_cost_model_predict(rk_ops_cost_model(ops), &d, p, 8, &count, &best));
    for (size_t i = 0; i < count; ++i) {
      CHECK(p[i].target.kind != RK_EXEC_GPU, "a GPU candidate");
      CHECK(p[i].measured == (p[i].target.kind == RK_EXEC_SCALAR),
            "%s measured %d", rk_exec_kind_name(p[i].target.kind),
            p[i].measured);
    }
    rk_ops_destroy(ops);
  }

  const char *lib = gpu_library_loaded(line, sizeof line);
  CHECK(lib == NULL, "gpu_backends 0 loaded %s: %s", lib, line);
  return rk_test_finish("ops_cpu_only");
}
