#include <rk/kernel.h>

/* Every atomic, on global and on block-shared memory, for int32_t and
 * uint32_t elements. Slots: see the test that runs it. */
RK_KERNEL void atomics_all(int *gi, uint32_t *gu, int *old_i,
                           uint32_t *old_u) {
  RK_SHARED int si[8];
  RK_SHARED uint32_t su[8];
  int t = (int)rk_thread_idx_x();
  if (t < 8) {
    si[t] = 0;
    su[t] = 0u;
  }
  rk_sync_threads();
  int v = t + 1;
  uint32_t u = (uint32_t)t + 1u;
  rk_atomic_add_i32(&gi[0], v);
  rk_atomic_sub_i32(&gi[1], v);
  rk_atomic_and_i32(&gi[2], ~(1 << (t & 7)));
  rk_atomic_or_i32(&gi[3], 1 << (t & 7));
  rk_atomic_xor_i32(&gi[4], v);
  old_i[t] = rk_atomic_exch_i32(&gi[5], v);
  rk_atomic_min_i32(&gi[6], -v);
  rk_atomic_max_i32(&gi[7], v);
  rk_atomic_cas_i32(&gi[8], t, t + 1);
  rk_atomic_add_u32(&gu[0], u);
  rk_atomic_sub_u32(&gu[1], u);
  rk_atomic_and_u32(&gu[2], ~(1u << (u & 7u)));
  rk_atomic_or_u32(&gu[3], 1u << (u & 7u));
  rk_atomic_xor_u32(&gu[4], u);
  old_u[t] = rk_atomic_exch_u32(&gu[5], u);
  rk_atomic_min_u32(&gu[6], u);
  rk_atomic_max_u32(&gu[7], u);
  rk_atomic_cas_u32(&gu[8], (uint32_t)t, (uint32_t)t + 1u);
  rk_atomic_add_i32(&si[0], v);
  rk_atomic_max_i32(&si[1], v);
  rk_atomic_cas_i32(&si[2], t, t + 1);
  rk_atomic_add_u32(&su[0], u);
  rk_atomic_min_u32(&su[1], u);
  rk_atomic_exch_u32(&su[2], u);
  rk_sync_threads();
  if (t == 0) {
    gi[9] = si[0];
    gi[10] = si[1];
    gi[11] = si[2];
    gu[9] = su[0];
    gu[10] = su[1];
  }
}
