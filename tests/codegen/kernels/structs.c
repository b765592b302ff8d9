#include <rk/kernel.h>

/* Nested structs and fixed arrays inside structs; the printers assert the
 * C layout (sizes and offsets) on every target. */
struct vec3 {
  float x, y, z;
};

typedef struct particle {
  struct vec3 pos;
  struct vec3 vel;
  float mass;
  int id;
  uint32_t flags[2];
} particle_t;

typedef struct {
  float dt;
  struct vec3 gravity;
  int steps;
} sim_params_t;

static struct vec3 add3(struct vec3 a, struct vec3 b) {
  struct vec3 r = {a.x + b.x, a.y + b.y, a.z + b.z};
  return r;
}

static struct vec3 scale3(struct vec3 a, float s) {
  struct vec3 r = {a.x * s, a.y * s, a.z * s};
  return r;
}

RK_KERNEL void integrate(int n, sim_params_t prm, particle_t *ps) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  particle_t q = ps[i];
  for (int s = 0; s < prm.steps; ++s) {
    q.vel = add3(q.vel, scale3(prm.gravity, prm.dt));
    q.pos = add3(q.pos, scale3(q.vel, prm.dt));
  }
  q.flags[0] |= 1u;
  q.flags[1] = (uint32_t)q.id;
  ps[i] = q;
}
