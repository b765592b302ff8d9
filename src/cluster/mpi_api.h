/* The few MPI calls the cluster's MPI launcher path makes, loaded at run
 * time (no MPI headers or libraries are needed to build rk).
 *
 * MPI's handles are not one ABI: Open MPI's MPI_Comm and MPI_Datatype are
 * pointers to global objects (ompi_mpi_comm_world, ompi_mpi_byte), MPICH's
 * are integers. rk supports Open MPI (libmpi.so.40; $RK_MPI_LIB replaces
 * it), found by those symbols; another MPI is refused with a message. The
 * library is opened RTLD_GLOBAL, as Open MPI's plugins need.
 *
 *   const rk_mpi_api_t *m;
 *   if (rk__mpi_api(&m) != RK_OK) ...    // rk_last_error(): why
 *   m->MPI_Comm_rank(m->comm_world, &rank);
 */
#ifndef RK_CLUSTER_MPI_API_H_
#define RK_CLUSTER_MPI_API_H_

#include "rk/status.h"

typedef void *rk_mpi_handle_t; /* MPI_Comm, MPI_Datatype (Open MPI) */

#define RK_MPI_SYMBOLS(X)                                              \
  X(MPI_Initialized, int, (int *))                                     \
  X(MPI_Finalized, int, (int *))                                       \
  X(MPI_Init, int, (int *, char ***))                                  \
  X(MPI_Finalize, int, (void))                                         \
  X(MPI_Comm_rank, int, (rk_mpi_handle_t, int *))                      \
  X(MPI_Comm_size, int, (rk_mpi_handle_t, int *))                      \
  X(MPI_Barrier, int, (rk_mpi_handle_t))                               \
  X(MPI_Allgather, int,                                                \
    (const void *, int, rk_mpi_handle_t, void *, int, rk_mpi_handle_t, \
     rk_mpi_handle_t))                                                 \
  X(MPI_Alltoall, int,                                                 \
    (const void *, int, rk_mpi_handle_t, void *, int, rk_mpi_handle_t, \
     rk_mpi_handle_t))                                                 \
  X(MPI_Get_library_version, int, (char *, int *))

typedef struct rk_mpi_api {
  void *handle;
  char path[256];
  rk_mpi_handle_t comm_world, byte;
#define RK_MPI_FIELD_(name, ret, params) ret(*name) params;
  RK_MPI_SYMBOLS(RK_MPI_FIELD_)
#undef RK_MPI_FIELD_
} rk_mpi_api_t;

/* Loads the MPI library once (thread-safe); RK_ERR_UNAVAILABLE with the
 * paths tried, or the reason it is not usable, in rk_last_error(). */
rk_status_t rk__mpi_api(const rk_mpi_api_t **out_api);

#endif /* RK_CLUSTER_MPI_API_H_ */
