/* quiesce.pml - freeing what other threads may be using
 * (src/base/quiesce.h; used for a cluster peer's UCP worker and endpoint,
 * src/cluster/cluster.c).
 *
 * NR readers each open K sections: store their sequence odd, load the
 * published object, use it (a second step: the window in which it must
 * stay alive), store the sequence even. The reclaimer retires objects one
 * after another: it unpublishes the current one (publishes the next in
 * its place, as a reused peer slot gets a new worker), then, for each
 * reader whose sequence it finds odd, waits until that sequence moves,
 * and frees the old object. Checked: no reader uses a freed object (an
 * assertion), and nobody waits forever (no invalid end state).
 *
 * Each statement is one access of the C code; spin's interleavings are
 * sequentially consistent, which the C code gets from its fences (the
 * section's light fence after its store, the reclaimer's heavy fence
 * after unpublishing).
 *
 * Negative controls, which spin must reject:
 *   -DBUG_LOAD_FIRST  a reader loads the object before it stores its
 *                     sequence odd: the reclaimer sees it outside a
 *                     section and frees what it is about to use
 *   -DBUG_NO_WAIT     the reclaimer frees at once after unpublishing
 *   -DBUG_SAMPLE_FIRST reads the sequences before unpublishing (what a
 *                     missing heavy fence allows: the load passes the
 *                     store): a section that opens in between loads
 *                     the old object and is not waited for
 */
#ifndef NR
#define NR 2
#endif
#ifndef K
#define K 2
#endif
#define NOBJ 3 /* objects 1 and 2 retired in turn; 0 is none */

byte cur = 1;          /* the published object */
bit freed[NOBJ + 1];
byte seq[NR];
byte finished = 0; /* readers done */

proctype reader(byte me) {
  byte k = 0, p;
  do
  :: k < K ->
#ifdef BUG_LOAD_FIRST
    p = cur;
    seq[me] = seq[me] + 1;
#else
    seq[me] = seq[me] + 1;
    p = cur;
#endif
    if
    :: p != 0 -> assert(!freed[p]) /* the use */
    :: else -> skip
    fi;
    seq[me] = seq[me] + 1;
    k++
  :: else -> break
  od;
  finished++
}

proctype reclaimer() {
  byte old, i, s;
  byte snap[NR];
  old = 1;
  do
  :: old < NOBJ ->
#ifdef BUG_SAMPLE_FIRST
    i = 0;
    do
    :: i < NR -> snap[i] = seq[i]; i++
    :: else -> break
    od;
#endif
    cur = old + 1; /* unpublish: the next object in its place */
#ifndef BUG_NO_WAIT
    i = 0;
    do
    :: i < NR ->
#ifdef BUG_SAMPLE_FIRST
      s = snap[i];
#else
      s = seq[i];
#endif
      if
      :: s % 2 == 1 -> (seq[i] != s)
      :: else -> skip
      fi;
      i++
    :: else -> break
    od;
#endif
    freed[old] = 1;
    old++
  :: else -> break
  od
}

init {
  byte i = 0;
  atomic {
    do
    :: i < NR -> run reader(i); i++
    :: else -> break
    od;
    run reclaimer()
  }
}
