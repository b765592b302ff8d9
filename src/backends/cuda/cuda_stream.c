/* CUDA streams: each rk stream is a non-blocking CUDA stream of the
 * context (see cuda.h). Errors of queued work come back from the driver at
 * the next synchronization. */
#include <stdlib.h>

#include "backends/cuda/cuda.h"
#include "base/error.h"

rk_status_t rk__cu_stream_create(rk_context_t *context, rk_stream_t **out) {
  cu_context_t *ctx = cu_ctx(context);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  cu_stream_t *st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: stream");
  CUresult err =
      ctx->api->cuStreamCreate(&st->stream, RK_CU_STREAM_NON_BLOCKING);
  if (err != RK_CUDA_SUCCESS) {
    free(st);
    return rk__cu_check(ctx, err, "cuStreamCreate");
  }
  pthread_mutex_init(&st->sync_lock, NULL);
  *out = &st->base;
  return RK_OK;
}

rk_status_t rk__cu_stream_synchronize(rk_stream_t *stream) {
  cu_context_t *ctx = cu_ctx(stream->context);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  return rk__cu_stream_sync(ctx, (cu_stream_t *)stream, "cuStreamSynchronize");
}

rk_status_t rk__cu_stream_destroy(rk_stream_t *stream) {
  cu_context_t *ctx = cu_ctx(stream->context);
  cu_stream_t *st = (cu_stream_t *)stream;
  rk_status_t s = RK_OK;
  /* On a lost context the loss was reported already: just let go. */
  if (!__atomic_load_n(&ctx->lost, __ATOMIC_ACQUIRE)) {
    s = rk__cu_enter(ctx);
    if (s == RK_OK)
      s = rk__cu_stream_sync(ctx, st, "cuStreamSynchronize (stream destroy)");
  }
  if (ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS)
    ctx->api->cuStreamDestroy(st->stream);
  /* Blocks still listed (a lost context) go with the context. */
  pthread_mutex_destroy(&st->sync_lock);
  free(st);
  return s;
}
