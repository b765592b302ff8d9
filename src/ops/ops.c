/* The ops handle: argument checks, the binding choice of a target per call
 * (calibrated cost model, compat selector, or forced), dispatch to the
 * scalar / SIMD / BLAS / GPU engines, and the report.
 *
 * Nothing on the path of a forced call allocates or compiles once the
 * handle's pool (first large SIMD op) and GPU context (first GPU op) exist.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/pool.h"
#include "base/sys.h"
#include "base/trace.h"
#include "hal/hal.h"
#include "ops/ops_internal.h"

enum {
  MAX_GPUS = 16,
  MAX_USER_CONTEXTS = 16, /* callers' contexts with wrapped buffers */
  MAX_PREDICTIONS = 32,
  /* Elements per thread below which an element-wise op or reduction stays
   * on one thread: waking a worker costs a few microseconds. */
  PAR_MIN_ELEMS = RK__OPS_PAR_MIN_ELEMS,
  /* Multiply-adds per thread below which matmul/matvec stay on one. */
  PAR_MIN_FLOPS = 1 << 18,
};

typedef struct gpu_slot {
  rk_backend_kind_t kind;
  int device;
  rk_status_t status; /* of the open attempt; RK_OK once open */
  char error[256];    /* why it failed */
  rk__ops_gpu_t *gpu;
} gpu_slot_t;

struct rk_ops {
  rk_ops_options_t opt;
  rk_cost_model_t *model; /* RK_POLICY_CALIBRATED */
  int threads;
  pthread_mutex_t lock; /* guards pool creation and the GPU slots */
  rk__pool_t *pool; /* the shared CPU pool, acquired on the first large op */
  gpu_slot_t gpus[MAX_GPUS];
  int ngpus;
  /* Engines in callers' contexts (rk_ops_buffer_wrap), each alive while
   * a wrapped buffer of its context is. Guarded by lock. */
  struct {
    rk_context_t *context;
    rk__ops_gpu_t *gpu;
    size_t buffers;
  } users[MAX_USER_CONTEXTS];
  int nusers;
  /* Compat: the best non-software GPU backend allowed, probed once. */
  bool gpu_probed;
  int best_gpu; /* index into gpus, or -1 */
};

const char *rk_policy_name(rk_policy_t policy) {
  switch (policy) {
    case RK_POLICY_CALIBRATED:
      return "calibrated";
    case RK_POLICY_COMPAT:
      return "compat";
    case RK_POLICY_FORCED:
      return "forced";
  }
  return "unknown";
}

void rk_ops_options_init(rk_ops_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->policy = RK_POLICY_CALIBRATED;
  o->target.kind = RK_EXEC_SCALAR;
  o->residency = RK_RESIDENT_HOST;
  o->gpu_backends = RK_OPS_GPU_BACKENDS_ALL;
  rk_compat_init(&o->compat);
  o->threads = 0;
  o->use_blas = true;
}

/* ---- Targets ------------------------------------------------------------ */

static int format_target(char *buf, size_t size, const rk_exec_target_t *t) {
  switch (t->kind) {
    case RK_EXEC_SCALAR:
      return snprintf(buf, size, "scalar");
    case RK_EXEC_SIMD:
      return snprintf(buf, size, "simd/%s", rk_isa_name(t->isa));
    case RK_EXEC_GPU:
      return snprintf(buf, size, "gpu/%s:%d", rk_backend_kind_name(t->backend),
                      t->device);
  }
  return snprintf(buf, size, "unknown target %d", (int)t->kind);
}

/* A forced target must exist as far as can be told without opening a
 * backend. */
static rk_status_t check_target(const rk_exec_target_t *t) {
  switch (t->kind) {
    case RK_EXEC_SCALAR:
      return RK_OK;
    case RK_EXEC_SIMD:
      if (t->isa == RK_ISA_NONE)
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops: a SIMD target needs an ISA (rk_isa_best() is "
                        "%s)",
                        rk_isa_name(rk_isa_best()));
      if ((unsigned)t->isa > RK_ISA_NEON)
        return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: unknown ISA %d",
                        (int)t->isa);
      if (!rk_isa_supported(t->isa))
        return rk__fail(RK_ERR_UNAVAILABLE,
                        "ops: ISA %s is not available on this CPU or in this "
                        "build (best here: %s)",
                        rk_isa_name(t->isa), rk_isa_name(rk_isa_best()));
      return RK_OK;
    case RK_EXEC_GPU:
      if (t->backend <= RK_BACKEND_AUTO || t->backend >= RK_BACKEND_KIND_COUNT_)
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops: a GPU target needs a backend (cpu, cuda, "
                        "metal, webgpu, opencl), not %d",
                        (int)t->backend);
      if (t->device < 0)
        return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: device %d", t->device);
      return RK_OK;
  }
  return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: unknown target kind %d",
                  (int)t->kind);
}

/* The GPU engine for backend/device, opened on first use (then cached,
 * failures too, so a missing backend is not retried on every call). */
static rk_status_t gpu_get(rk_ops_t *ops, rk_backend_kind_t kind, int device,
                           rk__ops_gpu_t **out) {
  pthread_mutex_lock(&ops->lock);
  gpu_slot_t *slot = NULL;
  for (int i = 0; i < ops->ngpus; ++i)
    if (ops->gpus[i].kind == kind && ops->gpus[i].device == device)
      slot = &ops->gpus[i];
  if (!slot) {
    if (ops->ngpus == MAX_GPUS) {
      pthread_mutex_unlock(&ops->lock);
      return rk__fail(RK_ERR_OUT_OF_RANGE, "ops: more than %d GPU devices",
                      MAX_GPUS);
    }
    slot = &ops->gpus[ops->ngpus++];
    slot->kind = kind;
    slot->device = device;
    slot->status = rk__ops_gpu_create(kind, device, &slot->gpu);
    if (slot->status != RK_OK)
      snprintf(slot->error, sizeof slot->error, "%s", rk_last_error());
  }
  rk_status_t s = slot->status;
  rk__ops_gpu_t *gpu = slot->gpu;
  char error[sizeof slot->error];
  memcpy(error, slot->error, sizeof error);
  pthread_mutex_unlock(&ops->lock);
  if (s != RK_OK) return rk__fail(s, "%s", error);
  *out = gpu;
  return RK_OK;
}

/* The best GPU the automatic policies may use: the first allowed backend in
 * rk's auto-selection order with a device that is not an emulation. Failed
 * probes leave rk_last_error() as it was. */
static int best_gpu(rk_ops_t *ops) {
  pthread_mutex_lock(&ops->lock);
  bool probed = ops->gpu_probed;
  int best = ops->best_gpu;
  pthread_mutex_unlock(&ops->lock);
  if (probed) return best;
  static const rk_backend_kind_t order[] = {
      RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL};
  best = -1;
  char *saved = rk__error_save();
  for (size_t i = 0; i < sizeof order / sizeof order[0] && best < 0; ++i) {
    if (!(ops->opt.gpu_backends & RK_OPS_BACKEND_BIT(order[i]))) continue;
    rk__ops_gpu_t *gpu;
    if (gpu_get(ops, order[i], 0, &gpu) == RK_OK &&
        !rk__ops_gpu_is_software(gpu)) {
      pthread_mutex_lock(&ops->lock);
      for (int j = 0; j < ops->ngpus; ++j)
        if (ops->gpus[j].gpu == gpu) best = j;
      pthread_mutex_unlock(&ops->lock);
    }
  }
  rk__error_restore(saved);
  pthread_mutex_lock(&ops->lock);
  ops->gpu_probed = true;
  ops->best_gpu = best;
  pthread_mutex_unlock(&ops->lock);
  return best;
}

static rk_exec_target_t simd_or_scalar(void) {
  rk_exec_target_t t = {RK_EXEC_SIMD, rk_isa_best(), RK_BACKEND_AUTO, 0};
  if (t.isa == RK_ISA_NONE) t.kind = RK_EXEC_SCALAR;
  return t;
}

/* ---- Handle ------------------------------------------------------------- */

static rk_status_t validate_policy(rk_policy_t policy,
                                   const rk_exec_target_t *target) {
  switch (policy) {
    case RK_POLICY_CALIBRATED:
    case RK_POLICY_COMPAT:
      return RK_OK;
    case RK_POLICY_FORCED:
      if (!target)
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops: RK_POLICY_FORCED needs a target");
      return check_target(target);
  }
  return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: unknown policy %d",
                  (int)policy);
}

/* The calibrated policy's model. Without GPU backends to choose from, none
 * is opened: the model then reads the CPU rates of a profile measured on
 * this CPU (rk_cost_model_options_t.cpu_only). */
static rk_status_t open_model(rk_ops_t *ops) {
  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.cpu_only = (ops->opt.gpu_backends & RK_OPS_GPU_BACKENDS_ALL) == 0;
  return rk_cost_model_open_with(&o, &ops->model);
}

const rk_cost_model_t *rk_ops_cost_model(const rk_ops_t *ops) {
  return ops ? ops->model : NULL;
}

rk_status_t rk_ops_create(const rk_ops_options_t *options, rk_ops_t **out) {
  if (!out) return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: out_ops is NULL");
  rk_ops_options_t opt;
  if (options)
    opt = *options;
  else
    rk_ops_options_init(&opt);
  RK_RETURN_IF_ERROR(validate_policy(opt.policy, &opt.target));
  if (opt.residency != RK_RESIDENT_HOST && opt.residency != RK_RESIDENT_DEVICE)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: unknown residency %d",
                    (int)opt.residency);
  if (opt.threads < 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: threads is %d", opt.threads);
  int threads = opt.threads;
  if (threads == 0) {
    /* RK_OPS_THREADS, else the CPU backend's RK_CPU_THREADS, else the
     * CPUs: by default the ops library and the CPU backend share one pool
     * (base/pool.c pools are shared by size). */
    int ids[1024];
    long env = rk__allowed_cpus(ids, 1024);
    if (env < 1) env = 1;
    RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_THREADS", 1, 1024, &env));
    RK_RETURN_IF_ERROR(rk__env_long("RK_OPS_THREADS", 1, 1024, &env));
    threads = (int)env;
  }
  rk_ops_t *ops = calloc(1, sizeof *ops);
  if (!ops) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: handle");
  ops->opt = opt;
  ops->threads = threads;
  ops->best_gpu = -1;
  pthread_mutex_init(&ops->lock, NULL);
  if (opt.policy == RK_POLICY_CALIBRATED) {
    rk_status_t s = open_model(ops);
    if (s != RK_OK) {
      rk_ops_destroy(ops);
      return rk__fail_context(s, "ops: cost model");
    }
  }
  *out = ops;
  return RK_OK;
}

void rk_ops_destroy(rk_ops_t *ops) {
  if (!ops) return;
  for (int i = 0; i < ops->ngpus; ++i) rk__ops_gpu_destroy(ops->gpus[i].gpu);
  /* Wrapped buffers not destroyed: their contexts must still be alive. */
  for (int i = 0; i < ops->nusers; ++i) rk__ops_gpu_destroy(ops->users[i].gpu);
  rk__pool_release(ops->pool);
  rk_cost_model_destroy(ops->model);
  pthread_mutex_destroy(&ops->lock);
  free(ops);
}

rk_status_t rk_ops_set_policy(rk_ops_t *ops, rk_policy_t policy,
                              const rk_exec_target_t *target) {
  if (!ops) return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops: handle is NULL");
  RK_RETURN_IF_ERROR(validate_policy(policy, target));
  if (policy == RK_POLICY_CALIBRATED && !ops->model)
    RK_RETURN_IF_ERROR(open_model(ops));
  ops->opt.policy = policy;
  if (policy == RK_POLICY_FORCED) ops->opt.target = *target;
  return RK_OK;
}

/* ---- Choosing ----------------------------------------------------------- */

typedef struct choice {
  rk_exec_target_t target, chosen;
  bool has_prediction;
  double predicted_s;
  bool default_rates;
  char note[160];
} choice_t;

/* Whether an automatic policy may run on `t` (its ISA supported, its
 * backend allowed, present and not a software emulation). */
static bool usable(rk_ops_t *ops, const rk_exec_target_t *t) {
  switch (t->kind) {
    case RK_EXEC_SCALAR:
      return true;
    case RK_EXEC_SIMD:
      return t->isa != RK_ISA_NONE && rk_isa_supported(t->isa);
    case RK_EXEC_GPU: {
      if (t->backend <= RK_BACKEND_AUTO ||
          t->backend >= RK_BACKEND_KIND_COUNT_ ||
          !(ops->opt.gpu_backends & RK_OPS_BACKEND_BIT(t->backend)))
        return false;
      rk__ops_gpu_t *gpu;
      char *saved = rk__error_save();
      bool ok = gpu_get(ops, t->backend, t->device, &gpu) == RK_OK;
      rk__error_restore(saved);
      /* Emulations (PoCL's CPU device, lavapipe) only when forced. */
      return ok && !rk__ops_gpu_is_software(gpu);
    }
  }
  return false;
}

/* The decision as a trace event "cost <op>": the policy, the sizes, where
 * the op runs ("ran"), the policy's own answer when it differs ("chosen"),
 * and each candidate's predicted time ("pred_us:<target>"). */
static void trace_choice(const rk_ops_t *ops, const rk_op_desc_t *desc,
                         const choice_t *c, const rk_prediction_t *p,
                         size_t count) {
  char name[48], where[64];
  snprintf(name, sizeof name, "cost %s", rk_op_name(desc->op));
  rk__trace_event_t *e = rk__trace_instant("cost", name);
  rk__trace_arg_str(e, "policy", rk_policy_name(ops->opt.policy));
  rk__trace_arg_uint(e, "n", desc->n);
  if (desc->op == RK_OP_MATVEC || desc->op == RK_OP_MATMUL)
    rk__trace_arg_uint(e, "m", desc->m);
  if (desc->op == RK_OP_MATMUL) rk__trace_arg_uint(e, "k", desc->k);
  format_target(where, sizeof where, &c->target);
  rk__trace_arg_str(e, "ran", where);
  if (memcmp(&c->chosen, &c->target, sizeof c->target) != 0) {
    format_target(where, sizeof where, &c->chosen);
    rk__trace_arg_str(e, "chosen", where);
  }
  for (size_t i = 0; i < count; ++i) {
    char key[80];
    int w = snprintf(key, sizeof key, "pred_us:");
    format_target(key + w, sizeof key - (size_t)w, &p[i].target);
    rk__trace_arg_num(e, key, p[i].total_s * 1e6);
  }
  rk__trace_commit(e);
}

static rk_status_t choose(rk_ops_t *ops, const rk_op_desc_t *desc,
                          choice_t *c) {
  memset(c, 0, sizeof *c);
  switch (ops->opt.policy) {
    case RK_POLICY_FORCED:
      c->target = c->chosen = ops->opt.target;
      return RK_OK;
    case RK_POLICY_COMPAT: {
      rk_compat_choice_t k = rk_compat_select_for_op(&ops->opt.compat, desc);
      if (k == RK_COMPAT_SCALAR) {
        c->target.kind = RK_EXEC_SCALAR;
        c->chosen = c->target;
        return RK_OK;
      }
      if (k == RK_COMPAT_GPU) {
        c->chosen.kind = RK_EXEC_GPU;
        int g = best_gpu(ops);
        if (g >= 0) {
          c->target.kind = RK_EXEC_GPU;
          c->target.backend = ops->gpus[g].kind;
          c->target.device = ops->gpus[g].device;
          c->chosen = c->target;
          return RK_OK;
        }
        c->target = simd_or_scalar();
        snprintf(c->note, sizeof c->note,
                 "compat chose GPU; no GPU backend is present or allowed, "
                 "ran %s",
                 c->target.kind == RK_EXEC_SIMD ? "SIMD" : "scalar");
        return RK_OK;
      }
      c->target = c->chosen = simd_or_scalar();
      if (c->target.kind == RK_EXEC_SCALAR)
        snprintf(c->note, sizeof c->note,
                 "compat chose SIMD; this CPU has no vector ISA rk supports, "
                 "ran scalar");
      c->chosen.kind = RK_EXEC_SIMD;
      return RK_OK;
    }
    case RK_POLICY_CALIBRATED: {
      rk_prediction_t p[MAX_PREDICTIONS];
      size_t count = 0, best = 0;
      RK_RETURN_IF_ERROR(rk_cost_model_predict(ops->model, desc, p,
                                               MAX_PREDICTIONS, &count, &best));
      if (count == 0)
        return rk__fail(RK_ERR_INTERNAL,
                        "ops %s: the cost model has no "
                        "candidates",
                        rk_op_name(desc->op));
      if (best >= count) best = 0;
      c->chosen = p[best].target;
      long pick = -1;
      if (usable(ops, &p[best].target)) {
        pick = (long)best;
      } else {
        for (size_t i = 0; i < count; ++i)
          if (usable(ops, &p[i].target) &&
              (pick < 0 || p[i].total_s < p[pick].total_s))
            pick = (long)i;
      }
      if (pick < 0) {
        c->target.kind = RK_EXEC_SCALAR;
        snprintf(c->note, sizeof c->note,
                 "no candidate of the cost model is usable here; ran scalar");
        return RK_OK;
      }
      c->target = p[pick].target;
      c->has_prediction = true;
      c->predicted_s = p[pick].total_s;
      c->default_rates = !p[pick].measured;
      if ((size_t)pick != best) {
        char want[64];
        format_target(want, sizeof want, &c->chosen);
        snprintf(c->note, sizeof c->note,
                 "the model's best, %s, is not allowed or did not open; ran "
                 "the next best",
                 want);
      }
      if (rk__trace_on()) trace_choice(ops, desc, c, p, count);
      return RK_OK;
    }
  }
  return rk__fail(RK_ERR_INVALID_STATE, "ops: unknown policy %d",
                  (int)ops->opt.policy);
}

/* ---- CPU execution ------------------------------------------------------ */

static rk__pool_t *get_pool(rk_ops_t *ops) {
  if (ops->threads <= 1) return NULL;
  pthread_mutex_lock(&ops->lock);
  if (!ops->pool) {
    char *saved = rk__error_save();
    if (rk__pool_acquire(ops->threads, &ops->pool) != RK_OK)
      ops->pool = NULL; /* run on the calling thread */
    rk__error_restore(saved);
  }
  rk__pool_t *pool = ops->pool;
  pthread_mutex_unlock(&ops->lock);
  return pool;
}

typedef struct cpu_job {
  const rk__ops_cpu_t *k;
  const rk__ops_args_t *a;
  int parts;
  size_t chunk;    /* elements (or rows) per part */
  double part[64]; /* reduction partial per part */
} cpu_job_t;

enum { MAX_PARTS = 64 };

/* Part `p` of the job: its range of elements (or rows of the output). */
static void run_part(void *arg, int p) {
  cpu_job_t *j = arg;
  const rk__ops_args_t *a = j->a;
  const rk__ops_cpu_t *k = j->k;
  size_t total = a->op == RK_OP_MATVEC || a->op == RK_OP_MATMUL ? a->m : a->n;
  size_t lo = (size_t)p * j->chunk;
  if (lo >= total) {
    j->part[p] = NAN; /* no elements: not combined (see reduce_parts) */
    return;
  }
  size_t len = total - lo < j->chunk ? total - lo : j->chunk;
  switch (a->op) {
    case RK_OP_ADD:
      k->add(len, a->a + lo, a->b + lo, a->out + lo);
      break;
    case RK_OP_SUB:
      k->sub(len, a->a + lo, a->b + lo, a->out + lo);
      break;
    case RK_OP_MUL:
      k->mul(len, a->a + lo, a->b + lo, a->out + lo);
      break;
    case RK_OP_SCALE:
      k->scale(len, a->alpha, a->a + lo, a->out + lo);
      break;
    case RK_OP_AXPY:
      k->axpy(len, a->alpha, a->a + lo, a->out + lo);
      break;
    case RK_OP_FMA:
      k->fma(len, a->a + lo, a->b + lo, a->c + lo, a->out + lo);
      break;
    case RK_OP_RELU:
      k->relu(len, a->a + lo, a->out + lo);
      break;
    case RK_OP_SIGMOID:
      k->sigmoid(len, a->a + lo, a->out + lo);
      break;
    case RK_OP_EXP:
      k->exp(len, a->a + lo, a->out + lo);
      break;
    case RK_OP_TANH:
      k->tanh(len, a->a + lo, a->out + lo);
      break;
    case RK_OP_LOG:
      k->log(len, a->a + lo, a->out + lo);
      break;
    case RK_OP_DOT:
      j->part[p] = k->dot(len, a->a + lo, a->b + lo);
      break;
    case RK_OP_SUM:
      j->part[p] = k->sum(len, a->a + lo);
      break;
    case RK_OP_MIN:
      j->part[p] = k->min(len, a->a + lo);
      break;
    case RK_OP_MAX:
      j->part[p] = k->max(len, a->a + lo);
      break;
    case RK_OP_MATVEC:
      k->gemv(len, a->n, a->a + lo * a->n, a->n, a->b, a->out + lo);
      break;
    case RK_OP_MATMUL:
      k->gemm(len, a->n, a->k, a->a + lo * a->k, a->k, a->b, a->n,
              a->out + lo * a->n, a->n);
      break;
    default:
      break;
  }
}

/* Parts [first, end) of the job, as the shared pool hands them out. */
static void run_parts(void *arg, uint64_t first, uint64_t end) {
  for (uint64_t p = first; p < end; ++p) run_part(arg, (int)p);
}

static float reduce_parts(const cpu_job_t *j) {
  rk_op_t op = j->a->op;
  if (op == RK_OP_DOT || op == RK_OP_SUM) {
    double acc = 0.0;
    for (int p = 0; p < j->parts; ++p)
      if (!((size_t)p * j->chunk >= j->a->n)) acc += j->part[p];
    return (float)acc;
  }
  double m = op == RK_OP_MIN ? INFINITY : -INFINITY;
  for (int p = 0; p < j->parts; ++p) {
    if ((size_t)p * j->chunk >= j->a->n) continue;
    double v = j->part[p];
    if (v != v) return NAN;
    if (op == RK_OP_MIN ? v < m : v > m) m = v;
  }
  return (float)m;
}

static int run_cpu(rk_ops_t *ops, const rk__ops_cpu_t *k,
                   const rk__ops_args_t *a, bool threaded) {
  cpu_job_t j;
  memset(&j, 0, sizeof j);
  j.k = k;
  j.a = a;
  bool matrix = a->op == RK_OP_MATVEC || a->op == RK_OP_MATMUL;
  size_t total = matrix ? a->m : a->n;
  int parts = 1;
  rk__pool_t *pool = NULL;
  if (threaded && total > 1) {
    double work = matrix ? (double)a->m * (double)a->n *
                               (double)(a->op == RK_OP_MATMUL ? a->k : 1)
                         : (double)a->n;
    double per = matrix ? PAR_MIN_FLOPS : PAR_MIN_ELEMS;
    double want = work / per;
    parts = want >= ops->threads ? ops->threads : (int)want;
    if (parts > MAX_PARTS) parts = MAX_PARTS;
    if ((size_t)parts > total) parts = (int)total;
    if (parts > 1) pool = get_pool(ops);
    if (!pool) parts = 1;
  }
  if (parts < 1) parts = 1;
  /* Chunks of whole cache lines (16 floats) for vectors; rows for
   * matrices. */
  size_t chunk = (total + (size_t)parts - 1) / (size_t)parts;
  if (!matrix) chunk = (chunk + 15) & ~(size_t)15;
  j.parts = parts;
  j.chunk = chunk ? chunk : 1;
  if (parts > 1)
    rk__pool_run(pool, (uint64_t)parts, 1, run_parts, &j);
  else
    run_part(&j, 0);
  if (a->result) *a->result = reduce_parts(&j);
  return parts;
}

/* ---- Entry -------------------------------------------------------------- */

/* dst = a b, truncated to size (no formatting on the hot path). */
static void set_str(char *dst, size_t size, const char *a, const char *b) {
  size_t la = strlen(a), lb = b ? strlen(b) : 0;
  if (la > size - 1) la = size - 1;
  if (lb > size - 1 - la) lb = size - 1 - la;
  memcpy(dst, a, la);
  if (lb) memcpy(dst + la, b, lb);
  dst[la + lb] = '\0';
}

static bool overlaps(const float *p, size_t pn, const float *q, size_t qn) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  return pn && qn && a < b + qn * sizeof(float) && b < a + pn * sizeof(float);
}

static bool is_reduction(rk_op_t op) {
  return op == RK_OP_DOT || op == RK_OP_SUM || op == RK_OP_MIN ||
         op == RK_OP_MAX;
}

static rk_status_t check_args(const rk__ops_args_t *a) {
  const char *name = rk_op_name(a->op);
  size_t limit = SIZE_MAX / sizeof(float);
  size_t in_count[3] = {a->n, a->n, a->n};
  size_t out_count = a->n;
  int nin = 1;
  switch (a->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
    case RK_OP_DOT:
      nin = 2;
      break;
    case RK_OP_FMA:
      nin = 3;
      break;
    case RK_OP_MATVEC:
      if (a->m && a->n > limit / a->m)
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops %s: a %zu x %zu matrix does not fit in memory",
                        name, a->m, a->n);
      nin = 2;
      in_count[0] = a->m * a->n;
      out_count = a->m;
      break;
    case RK_OP_MATMUL:
      if ((a->m && a->k > limit / a->m) || (a->k && a->n > limit / a->k) ||
          (a->m && a->n > limit / a->m))
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops %s: (%zu x %zu)(%zu x %zu) does not fit in "
                        "memory",
                        name, a->m, a->k, a->k, a->n);
      nin = 2;
      in_count[0] = a->m * a->k;
      in_count[1] = a->k * a->n;
      out_count = a->m * a->n;
      break;
    default:
      break;
  }
  if (a->n > limit)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops %s: n = %zu elements does not fit in memory", name,
                    a->n);
  const float *in[3] = {a->a, a->b, a->c};
  static const char *const in_names[3] = {"first input", "second input",
                                          "third input"};
  for (int i = 0; i < nin; ++i)
    if (!in[i] && in_count[i])
      return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: %s is NULL", name,
                      in_names[i]);
  if (is_reduction(a->op)) {
    if (!a->result)
      return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: out_result is NULL",
                      name);
    return RK_OK;
  }
  if (!a->out && out_count)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: output is NULL", name);
  bool matrix = a->op == RK_OP_MATVEC || a->op == RK_OP_MATMUL;
  for (int i = 0; i < nin; ++i) {
    if (!overlaps(a->out, out_count, in[i], in_count[i])) continue;
    /* Element-wise ops may write in place; nothing else may overlap. */
    if (!matrix && a->out == in[i]) continue;
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops %s: the output overlaps the %s%s", name, in_names[i],
                    matrix ? "" : " without being the same array");
  }
  return RK_OK;
}

static void fill_empty(const rk__ops_args_t *a) {
  switch (a->op) {
    case RK_OP_DOT:
    case RK_OP_SUM:
      *a->result = 0.0f;
      break;
    case RK_OP_MIN:
      *a->result = INFINITY;
      break;
    case RK_OP_MAX:
      *a->result = -INFINITY;
      break;
    case RK_OP_MATVEC: /* n == 0: y = 0 */
      if (a->m) memset(a->out, 0, a->m * sizeof(float));
      break;
    case RK_OP_MATMUL: /* k == 0: C = 0 */
      if (a->m && a->n) memset(a->out, 0, a->m * a->n * sizeof(float));
      break;
    default:
      break;
  }
}

static bool is_empty(const rk__ops_args_t *a) {
  switch (a->op) {
    case RK_OP_MATVEC:
      return a->m == 0 || a->n == 0;
    case RK_OP_MATMUL:
      return a->m == 0 || a->n == 0 || a->k == 0;
    default:
      return a->n == 0;
  }
}

static bool fits_int(size_t v) { return v <= (size_t)INT32_MAX; }

/* A GPU matmul's engine when the backend's vendor BLAS ran it
 * ("blas:libcublas.so.13"), and why not when it has one that could not. */
static void report_blas(rk_op_report_t *r, const rk__ops_gpu_blas_t *blas) {
  if (blas->library[0])
    set_str(r->engine, sizeof r->engine, "blas:", blas->library);
  else if (blas->why[0] && !r->note[0])
    set_str(r->note, sizeof r->note, "rk's GEMM kernel ran: ", blas->why);
}

static rk_status_t execute(rk_ops_t *ops, const rk__ops_args_t *a,
                           const choice_t *c, rk_op_report_t *r) {
  const rk_exec_target_t *t = &c->target;
  r->threads = 1;
  if (t->kind == RK_EXEC_GPU) {
    rk__ops_gpu_t *gpu;
    RK_RETURN_IF_ERROR(gpu_get(ops, t->backend, t->device, &gpu));
    set_str(r->engine, sizeof r->engine,
            "kernel:", rk_backend_kind_name(t->backend));
    if (is_empty(a)) {
      fill_empty(a);
      return RK_OK;
    }
    rk__ops_gpu_blas_t blas = {.allowed = ops->opt.use_blas};
    RK_RETURN_IF_ERROR(rk__ops_gpu_run(gpu, a, NULL, &blas));
    report_blas(r, &blas);
    return RK_OK;
  }
  rk_isa_t isa = t->kind == RK_EXEC_SIMD ? t->isa : RK_ISA_NONE;
  const rk__ops_cpu_t *k = rk__ops_cpu_for(isa);
  if (!k) {
    /* Reached only if a target changed under us; check_target said why. */
    return check_target(t);
  }
  set_str(r->engine, sizeof r->engine, k->name, NULL);
  if (is_empty(a)) {
    fill_empty(a);
    return RK_OK;
  }
  bool simd = t->kind == RK_EXEC_SIMD;
  if (a->op == RK_OP_MATMUL) {
    set_str(r->engine, sizeof r->engine, "gemm:", k->name);
    if (simd && ops->opt.use_blas && isa == rk_isa_best() &&
        rk__ops_blas_available() && fits_int(a->m) && fits_int(a->n) &&
        fits_int(a->k)) {
      set_str(r->engine, sizeof r->engine, "cblas:", rk__ops_blas_soname());
      r->threads = 0; /* the BLAS library's own threads */
      rk__ops_blas_sgemm(a->m, a->n, a->k, a->a, a->b, a->out);
      return RK_OK;
    }
  }
  if (a->op == RK_OP_MATVEC)
    set_str(r->engine, sizeof r->engine, "gemv:", k->name);
  r->threads = run_cpu(ops, k, a, simd);
  return RK_OK;
}

static rk_status_t run_op_untraced(rk_ops_t *ops, rk__ops_args_t *a,
                                   rk_op_report_t *report) {
  uint64_t t0 = rk__now_ns();
  if (!ops)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: handle is NULL",
                    rk_op_name(a->op));
  RK_RETURN_IF_ERROR(check_args(a));
  rk_op_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.op = a->op;
  desc.n = a->n;
  if (a->op == RK_OP_MATVEC || a->op == RK_OP_MATMUL) desc.m = a->m;
  if (a->op == RK_OP_MATMUL) desc.k = a->k;
  desc.inputs = ops->opt.residency;
  desc.result_on_host = true;
  choice_t c;
  RK_RETURN_IF_ERROR(choose(ops, &desc, &c));
  /* The calibrated policy traces its choice with the predictions. */
  if (rk__trace_on() && ops->opt.policy != RK_POLICY_CALIBRATED)
    trace_choice(ops, &desc, &c, NULL, 0);
  rk_op_report_t local;
  rk_op_report_t *r = report ? report : &local;
  memset(r, 0, sizeof *r);
  r->op = a->op;
  r->policy = ops->opt.policy;
  r->target = c.target;
  r->chosen = c.chosen;
  r->has_prediction = c.has_prediction;
  r->predicted_s = c.predicted_s;
  r->default_rates = c.default_rates;
  if (c.note[0]) set_str(r->note, sizeof r->note, c.note, NULL);
  rk_status_t s = execute(ops, a, &c, r);
  r->wall_s = (double)(rk__now_ns() - t0) * 1e-9;
  if (s != RK_OK) {
    char where[64];
    format_target(where, sizeof where, &c.target);
    return rk__fail_context(s, "ops %s (%s policy, target %s)",
                            rk_op_name(a->op), rk_policy_name(ops->opt.policy),
                            where);
  }
  return RK_OK;
}

static rk_status_t run_op(rk_ops_t *ops, rk__ops_args_t *a,
                          rk_op_report_t *report) {
  if (!rk__trace_on()) return run_op_untraced(ops, a, report);
  char name[48];
  snprintf(name, sizeof name, "ops %s", rk_op_name(a->op));
  rk_op_report_t local;
  rk_op_report_t *r = report ? report : &local;
  memset(r, 0, sizeof *r);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, name);
  rk_status_t s = run_op_untraced(ops, a, r);
  rk__trace_event_t *e = rk__trace_span_end(&span, "ops");
  rk__trace_arg_uint(e, "n", a->n);
  if (s == RK_OK) {
    char where[64];
    format_target(where, sizeof where, &r->target);
    rk__trace_arg_str(e, "ran", where);
    rk__trace_arg_str(e, "engine", r->engine);
    rk__trace_arg_int(e, "threads", r->threads);
    if (r->has_prediction)
      rk__trace_arg_num(e, "predicted_us", r->predicted_s * 1e6);
  }
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

/* ---- Public ops --------------------------------------------------------- */

#define ARGS(opname)       \
  rk__ops_args_t a;        \
  memset(&a, 0, sizeof a); \
  a.op = RK_OP_##opname

#define BINARY_OP(fname, opname)                                             \
  rk_status_t fname(rk_ops_t *ops, size_t n, const float *x, const float *y, \
                    float *out, rk_op_report_t *report) {                    \
    ARGS(opname);                                                            \
    a.n = n;                                                                 \
    a.a = x;                                                                 \
    a.b = y;                                                                 \
    a.out = out;                                                             \
    return run_op(ops, &a, report);                                          \
  }

BINARY_OP(rk_ops_add, ADD)
BINARY_OP(rk_ops_sub, SUB)
BINARY_OP(rk_ops_mul, MUL)

#define UNARY_OP(fname, opname)                                        \
  rk_status_t fname(rk_ops_t *ops, size_t n, const float *x, float *y, \
                    rk_op_report_t *report) {                          \
    ARGS(opname);                                                      \
    a.n = n;                                                           \
    a.a = x;                                                           \
    a.out = y;                                                         \
    return run_op(ops, &a, report);                                    \
  }

UNARY_OP(rk_ops_relu, RELU)
UNARY_OP(rk_ops_sigmoid, SIGMOID)
UNARY_OP(rk_ops_exp, EXP)
UNARY_OP(rk_ops_tanh, TANH)
UNARY_OP(rk_ops_log, LOG)

rk_status_t rk_ops_scale(rk_ops_t *ops, size_t n, float alpha, const float *x,
                         float *y, rk_op_report_t *report) {
  ARGS(SCALE);
  a.n = n;
  a.alpha = alpha;
  a.a = x;
  a.out = y;
  return run_op(ops, &a, report);
}

rk_status_t rk_ops_axpy(rk_ops_t *ops, size_t n, float alpha, const float *x,
                        float *y, rk_op_report_t *report) {
  ARGS(AXPY);
  a.n = n;
  a.alpha = alpha;
  a.a = x;
  a.b = y; /* y is read too */
  a.out = y;
  return run_op(ops, &a, report);
}

rk_status_t rk_ops_fma(rk_ops_t *ops, size_t n, const float *x, const float *y,
                       const float *z, float *out, rk_op_report_t *report) {
  ARGS(FMA);
  a.n = n;
  a.a = x;
  a.b = y;
  a.c = z;
  a.out = out;
  return run_op(ops, &a, report);
}

rk_status_t rk_ops_dot(rk_ops_t *ops, size_t n, const float *x, const float *y,
                       float *out_result, rk_op_report_t *report) {
  ARGS(DOT);
  a.n = n;
  a.a = x;
  a.b = y;
  a.result = out_result;
  return run_op(ops, &a, report);
}

#define REDUCE_OP(fname, opname)                                 \
  rk_status_t fname(rk_ops_t *ops, size_t n, const float *x,     \
                    float *out_result, rk_op_report_t *report) { \
    ARGS(opname);                                                \
    a.n = n;                                                     \
    a.a = x;                                                     \
    a.result = out_result;                                       \
    return run_op(ops, &a, report);                              \
  }

REDUCE_OP(rk_ops_sum, SUM)
REDUCE_OP(rk_ops_min, MIN)
REDUCE_OP(rk_ops_max, MAX)

rk_status_t rk_ops_matvec(rk_ops_t *ops, size_t m, size_t n, const float *ma,
                          const float *x, float *y, rk_op_report_t *report) {
  ARGS(MATVEC);
  a.m = m;
  a.n = n;
  a.a = ma;
  a.b = x;
  a.out = y;
  return run_op(ops, &a, report);
}

rk_status_t rk_ops_matmul(rk_ops_t *ops, size_t m, size_t n, size_t k,
                          const float *ma, const float *mb, float *mc,
                          rk_op_report_t *report) {
  ARGS(MATMUL);
  a.m = m;
  a.n = n;
  a.k = k;
  a.a = ma;
  a.b = mb;
  a.out = mc;
  return run_op(ops, &a, report);
}

/* ---- Device-resident operands ------------------------------------------- */

struct rk_ops_buffer {
  rk__ops_gpu_t *gpu;
  rk_exec_target_t target;
  rk_devptr_t ptr;
  size_t n;
  rk_ops_t *ops; /* wrapped: the handle whose engine list holds gpu */
  bool wrapped;  /* the caller's memory: never freed here */
};

rk_status_t rk_ops_buffer_create(rk_ops_t *ops, const rk_exec_target_t *target,
                                 size_t n, rk_ops_buffer_t **out) {
  if (!ops || !target || !out)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops buffer: ops, target and out_buffer must not be NULL");
  if (target->kind != RK_EXEC_GPU)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops buffer: buffers live on a GPU target, not %s",
                    rk_exec_kind_name(target->kind));
  RK_RETURN_IF_ERROR(check_target(target));
  if (n == 0 || n > SIZE_MAX / sizeof(float))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops buffer: length %zu (it must be > 0 and fit in "
                    "memory)",
                    n);
  rk__ops_gpu_t *gpu;
  RK_RETURN_IF_ERROR(gpu_get(ops, target->backend, target->device, &gpu));
  rk_ops_buffer_t *b = calloc(1, sizeof *b);
  if (!b) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops buffer");
  rk_status_t s =
      rk_context_allocate(rk__ops_gpu_context(gpu), n * sizeof(float), &b->ptr);
  if (s != RK_OK) {
    free(b);
    return rk__fail_context(s, "ops buffer of %zu floats", n);
  }
  b->gpu = gpu;
  b->target = *target;
  b->n = n;
  *out = b;
  return RK_OK;
}

rk_status_t rk_ops_buffer_wrap(rk_ops_t *ops, rk_context_t *context,
                               rk_devptr_t ptr, size_t n,
                               rk_ops_buffer_t **out) {
  if (!ops || !context || !out)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops buffer wrap: ops, context and out_buffer must not "
                    "be NULL");
  if (n == 0 || n > SIZE_MAX / sizeof(float))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops buffer wrap: length %zu (it must be > 0 and fit in "
                    "memory)",
                    n);
  rk_status_t s = context->vt->check_range(context, ptr, n * sizeof(float));
  if (s != RK_OK)
    return rk__fail_context(s,
                            "ops buffer wrap: %zu floats at 0x%llx are not "
                            "inside one allocation of the context",
                            n, (unsigned long long)ptr);
  rk_ops_buffer_t *b = calloc(1, sizeof *b);
  if (!b) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops buffer wrap");
  pthread_mutex_lock(&ops->lock);
  int u = -1;
  for (int i = 0; i < ops->nusers; ++i)
    if (ops->users[i].context == context) u = i;
  if (u < 0) {
    if (ops->nusers == MAX_USER_CONTEXTS) {
      s = rk__fail(RK_ERR_OUT_OF_MEMORY,
                   "ops buffer wrap: wrapped buffers of %d contexts are "
                   "alive; destroy some first",
                   MAX_USER_CONTEXTS);
    } else {
      /* Compiles the kernels in the caller's context (the kernel cache
       * makes this cheap after the first time). */
      rk__ops_gpu_t *gpu = NULL;
      s = rk__ops_gpu_create_in(context, &gpu);
      if (s == RK_OK) {
        u = ops->nusers++;
        ops->users[u].context = context;
        ops->users[u].gpu = gpu;
        ops->users[u].buffers = 0;
      }
    }
  }
  if (s == RK_OK) {
    ops->users[u].buffers++;
    b->gpu = ops->users[u].gpu;
  }
  pthread_mutex_unlock(&ops->lock);
  if (s != RK_OK) {
    free(b);
    return s;
  }
  b->target.kind = RK_EXEC_GPU;
  b->target.isa = RK_ISA_NONE;
  b->target.backend = rk_backend_kind(rk_context_backend(context));
  b->target.device = context->device;
  b->ptr = ptr;
  b->n = n;
  b->ops = ops;
  b->wrapped = true;
  *out = b;
  return RK_OK;
}

void rk_ops_buffer_destroy(rk_ops_buffer_t *b) {
  if (!b) return;
  if (!b->wrapped) {
    rk_context_free(rk__ops_gpu_context(b->gpu), b->ptr);
    free(b);
    return;
  }
  rk_ops_t *ops = b->ops;
  pthread_mutex_lock(&ops->lock);
  for (int i = 0; i < ops->nusers; ++i) {
    if (ops->users[i].gpu != b->gpu) continue;
    if (--ops->users[i].buffers == 0) {
      /* The last wrapped buffer of this context: the engine goes, so the
       * context may be destroyed after this. */
      rk__ops_gpu_destroy(ops->users[i].gpu);
      ops->users[i] = ops->users[--ops->nusers];
    }
    break;
  }
  pthread_mutex_unlock(&ops->lock);
  free(b);
}

size_t rk_ops_buffer_length(const rk_ops_buffer_t *b) { return b ? b->n : 0; }

static rk_status_t check_range(const rk_ops_buffer_t *b, size_t offset,
                               size_t n, const void *host, const char *what) {
  if (!b) return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: buffer is NULL", what);
  if (n && !host)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", what);
  if (offset > b->n || n > b->n - offset)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%s: elements [%zu, %zu + %zu) of a buffer of %zu", what,
                    offset, offset, n, b->n);
  return RK_OK;
}

rk_status_t rk_ops_buffer_write(rk_ops_buffer_t *b, size_t offset,
                                const float *src, size_t n) {
  RK_RETURN_IF_ERROR(check_range(b, offset, n, src, "ops buffer write"));
  if (n == 0) return RK_OK;
  return rk_context_copy_to_device(rk__ops_gpu_context(b->gpu),
                                   b->ptr + offset * sizeof(float), src,
                                   n * sizeof(float));
}

rk_status_t rk_ops_buffer_read(const rk_ops_buffer_t *b, size_t offset,
                               float *dst, size_t n) {
  RK_RETURN_IF_ERROR(check_range(b, offset, n, dst, "ops buffer read"));
  if (n == 0) return RK_OK;
  return rk_context_copy_to_host(rk__ops_gpu_context(b->gpu), dst,
                                 b->ptr + offset * sizeof(float),
                                 n * sizeof(float));
}

/* Inputs and output of `a`'s op: counts in elements. */
static rk_status_t resident_shape(const rk__ops_args_t *a, int *nin,
                                  bool *has_out, size_t in_count[3],
                                  size_t *out_count) {
  size_t limit = SIZE_MAX / sizeof(float);
  *nin = 1;
  *has_out = true;
  in_count[0] = in_count[1] = in_count[2] = a->n;
  *out_count = a->n;
  switch (a->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
      *nin = 2;
      break;
    case RK_OP_FMA:
      *nin = 3;
      break;
    case RK_OP_AXPY: /* x, y: y is both */
      *nin = 2;
      *has_out = false;
      break;
    case RK_OP_DOT:
      *nin = 2;
      *has_out = false;
      break;
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      *has_out = false;
      break;
    case RK_OP_MATVEC:
      if (a->m && a->n > limit / a->m) goto too_big;
      *nin = 2;
      in_count[0] = a->m * a->n;
      *out_count = a->m;
      break;
    case RK_OP_MATMUL:
      if ((a->m && a->k > limit / a->m) || (a->k && a->n > limit / a->k) ||
          (a->m && a->n > limit / a->m))
        goto too_big;
      *nin = 2;
      in_count[0] = a->m * a->k;
      in_count[1] = a->k * a->n;
      *out_count = a->m * a->n;
      break;
    default:
      break;
  }
  return RK_OK;
too_big:
  return rk__fail(RK_ERR_INVALID_ARGUMENT,
                  "ops %s: m=%zu n=%zu k=%zu does not fit in memory",
                  rk_op_name(a->op), a->m, a->n, a->k);
}

rk_status_t rk_ops_run_resident(rk_ops_t *ops, const rk_op_desc_t *desc,
                                float alpha, rk_ops_buffer_t *const *operands,
                                size_t noperands, float *out_result,
                                rk_op_report_t *report) {
  uint64_t t0 = rk__now_ns();
  if (!ops || !desc || (noperands && !operands))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops resident: ops, desc and operands must not be NULL");
  if ((unsigned)desc->op >= RK_OP_COUNT_)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops resident: unknown op %d",
                    (int)desc->op);
  const char *name = rk_op_name(desc->op);
  rk__ops_args_t a;
  memset(&a, 0, sizeof a);
  a.op = desc->op;
  a.alpha = alpha;
  if (desc->m > SIZE_MAX || desc->n > SIZE_MAX || desc->k > SIZE_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: sizes too large", name);
  a.n = (size_t)desc->n;
  if (a.op == RK_OP_MATVEC || a.op == RK_OP_MATMUL) a.m = (size_t)desc->m;
  if (a.op == RK_OP_MATMUL) a.k = (size_t)desc->k;
  int nin;
  bool has_out;
  size_t in_count[3], out_count;
  RK_RETURN_IF_ERROR(resident_shape(&a, &nin, &has_out, in_count, &out_count));
  size_t want = (size_t)nin + (has_out ? 1 : 0);
  if (noperands != want)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ops %s: %zu buffer(s) given, the op takes %zu", name,
                    noperands, want);
  for (size_t i = 0; i < noperands; ++i) {
    if (!operands[i])
      return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: buffer %zu is NULL",
                      name, i);
    if (operands[i]->gpu != operands[0]->gpu)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "ops %s: buffers %zu and 0 are on different targets "
                      "or in different contexts",
                      name, i);
    size_t need = (int)i < nin ? in_count[i] : out_count;
    if (operands[i]->n < need)
      return rk__fail(RK_ERR_OUT_OF_RANGE,
                      "ops %s: buffer %zu holds %zu floats, the shape needs "
                      "%zu",
                      name, i, operands[i]->n, need);
  }
  bool matrix = a.op == RK_OP_MATVEC || a.op == RK_OP_MATMUL;
  if (matrix)
    for (int i = 0; i < nin; ++i)
      if (operands[nin] == operands[i])
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "ops %s: the output buffer is also input %d", name, i);
  bool reduction = is_reduction(a.op);
  if (reduction && !out_result)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "ops %s: out_result is NULL",
                    name);
  a.result = out_result;

  const rk_ops_buffer_t *first = operands[0];
  rk_op_report_t local;
  rk_op_report_t *r = report ? report : &local;
  memset(r, 0, sizeof *r);
  r->op = a.op;
  r->policy = ops->opt.policy;
  r->target = r->chosen = first->target;
  r->threads = 1;
  set_str(r->engine, sizeof r->engine,
          "kernel:", rk_backend_kind_name(first->target.backend));
  set_str(r->note, sizeof r->note,
          first->wrapped ? "operands in the caller's device memory: the "
                           "policy is not consulted"
                         : "operands resident on the device: the policy is "
                           "not consulted",
          NULL);
  if (ops->model) {
    rk_op_desc_t d = *desc;
    d.inputs = RK_RESIDENT_DEVICE;
    d.result_on_host = reduction;
    rk_prediction_t p[MAX_PREDICTIONS];
    size_t count = 0, best = 0;
    char *saved = rk__error_save();
    if (rk_cost_model_predict(ops->model, &d, p, MAX_PREDICTIONS, &count,
                              &best) == RK_OK)
      for (size_t i = 0; i < count; ++i)
        if (p[i].target.kind == RK_EXEC_GPU &&
            p[i].target.backend == first->target.backend &&
            p[i].target.device == first->target.device) {
          r->has_prediction = true;
          r->predicted_s = p[i].total_s;
          r->default_rates = !p[i].measured;
        }
    rk__error_restore(saved);
  }

  rk_devptr_t dev[4] = {0, 0, 0, 0};
  for (int i = 0; i < nin; ++i) dev[i] = operands[i]->ptr;
  if (has_out) dev[3] = operands[nin]->ptr;
  rk_status_t s = RK_OK;
  if (is_empty(&a)) {
    if (reduction) {
      fill_empty(&a);
    } else if (matrix && out_count) {
      /* n == 0 (matvec) or k == 0 (matmul): the output is zeros */
      float *zeros = calloc(out_count, sizeof(float));
      if (!zeros) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops %s", name);
      s = rk_context_copy_to_device(rk__ops_gpu_context(first->gpu), dev[3],
                                    zeros, out_count * sizeof(float));
      free(zeros);
    }
  } else {
    rk__ops_gpu_blas_t blas = {.allowed = ops->opt.use_blas};
    s = rk__ops_gpu_run(first->gpu, &a, dev, &blas);
    if (s == RK_OK) report_blas(r, &blas);
  }
  r->wall_s = (double)(rk__now_ns() - t0) * 1e-9;
  return s;
}
