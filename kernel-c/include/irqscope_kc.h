/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * irqscope_kc.h - irqscope's user-space stand-in for the kernel headers that lib/group_cpus.c,
 * lib/sort.c, kernel/irq/affinity.c and block/blk-mq-cpumap.c include. Every <linux/...>
 * header irqscope provides, and the block layer's local "blk.h" and "blk-mq.h" (the list is
 * LINUX_HEADERS in src/kernel_c_tools/build.rs, written into each build) includes this one file;
 * a header outside that list is missing on purpose, so a build names it.
 *
 * The kernel modelled: an x86-64 SMP kernel built for NR_CPUS = 8192 with
 * CONFIG_CPUMASK_OFFSTACK (cpumask_var_t is a pointer) and NODES_SHIFT = 10. Since NR_CPUS is
 * more than four words, every cpumask walk stops at nr_cpu_ids, as include/linux/cpumask.h
 * does in that configuration (small_cpumask_bits == large_cpumask_bits == nr_cpu_ids).
 *
 * What the stand-ins model: the bitmap and find-bit semantics (lowest set bit first, results
 * clipped to the walk's size, "none" returned as the size), cpumask and nodemask operations,
 * the topology accessors (cpu_to_node, topology_sibling_cpumask, topology_cluster_cpumask,
 * cpu_possible_mask, cpu_present_mask, cpu_online_mask, the possible nodes) and the boot
 * parameters (irq_default_affinity, the HK_TYPE_MANAGED_IRQ housekeeping mask) as tables the
 * harness fills from
 * irqscope's view of the machine, the slab allocators (calloc; they never fail unless the
 * process's memory limit is hit), atomic_t (a plain int: one thread), and WARN_ON() family
 * (recorded with file, line and condition, returned to irqscope as data).
 *
 * What they do not model: preemption, interrupts, RCU, CPU hotplug during a call, lockdep,
 * memory ordering between CPUs, real allocation failure paths (no fault injection), printk
 * (pr_* calls print nothing).
 */
#ifndef IRQSCOPE_KC_H
#define IRQSCOPE_KC_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_SMP 1
#define CONFIG_64BIT 1
#define CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS 1
#define CONFIG_CPUMASK_OFFSTACK 1
#define IS_ENABLED(option) (option + 0)

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned int gfp_t;

typedef int (*cmp_func_t)(const void *a, const void *b);
typedef void (*swap_func_t)(void *a, void *b, int size);
typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);

/* ---- compiler and kernel.h odds and ends ---- */
#undef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#ifndef __attribute_const__
#define __attribute_const__ __attribute__((__const__))
#endif
#define __init
#define __exit
#define __read_mostly
#define __initdata
#define __maybe_unused __attribute__((__unused__))
#define __must_check
#define __pure __attribute__((__pure__))
#define noinline __attribute__((__noinline__))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define data_race(expr) (expr)
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val) do { *(volatile __typeof__(x) *)&(x) = (val); } while (0)
#define cond_resched() do { } while (0)
#define might_sleep() do { } while (0)
#define cpus_read_lock() do { } while (0)
#define cpus_read_unlock() do { } while (0)
#define lockdep_assert_cpus_held() do { } while (0)
#define pr_fmt(fmt) fmt
#define pr_warn(...) do { } while (0)
#define pr_err(...) do { } while (0)
#define pr_info(...) do { } while (0)
#define pr_debug(...) do { } while (0)
#define GFP_KERNEL 0u
#define GFP_ATOMIC 0u
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define BITS_PER_LONG 64
#define BITS_PER_BYTE 8
#define BITS_TO_LONGS(nr) DIV_ROUND_UP(nr, BITS_PER_LONG)
#define BIT(nr) (1UL << (nr))

#define min(x, y) ({ __typeof__(x) _kc_x = (x); __typeof__(y) _kc_y = (y); _kc_x < _kc_y ? _kc_x : _kc_y; })
#define max(x, y) ({ __typeof__(x) _kc_x = (x); __typeof__(y) _kc_y = (y); _kc_x > _kc_y ? _kc_x : _kc_y; })
#define min_t(type, x, y) ({ type _kc_x = (x); type _kc_y = (y); _kc_x < _kc_y ? _kc_x : _kc_y; })
#define max_t(type, x, y) ({ type _kc_x = (x); type _kc_y = (y); _kc_x > _kc_y ? _kc_x : _kc_y; })
#define clamp(v, lo, hi) min(max(v, lo), hi)

/* ---- WARN as data (the harness reports each firing with its file and line) ---- */
void irqscope_kc_warn(const char *file, int line, const char *cond);
void irqscope_kc_bug(const char *file, int line, const char *cond) __attribute__((__noreturn__));
#define WARN_ON(cond) ({ int _kc_c = !!(cond); if (unlikely(_kc_c)) irqscope_kc_warn(__FILE__, __LINE__, #cond); _kc_c; })
#define WARN_ON_ONCE(cond) WARN_ON(cond)
#define WARN(cond, ...) WARN_ON(cond)
#define WARN_ONCE(cond, ...) WARN_ON(cond)
#define BUG_ON(cond) do { if (unlikely(cond)) irqscope_kc_bug(__FILE__, __LINE__, #cond); } while (0)
#define BUG() irqscope_kc_bug(__FILE__, __LINE__, "BUG()")

/* ---- slab: calloc and free ---- */
static inline void *kmalloc(size_t size, gfp_t flags) { (void)flags; return calloc(1, size ? size : 1); }
static inline void *kzalloc(size_t size, gfp_t flags) { (void)flags; return calloc(1, size ? size : 1); }
static inline void *kcalloc(size_t n, size_t size, gfp_t flags)
{
	(void)flags;
	return n && size ? calloc(n, size) : calloc(1, 1);
}
static inline void *kmalloc_array(size_t n, size_t size, gfp_t flags) { return kcalloc(n, size, flags); }
static inline void kfree(const void *p) { free((void *)p); }
/* 7.x slab helpers: COUNT zeroed objects of sizeof(VAR_OR_TYPE), an optional GFP last. */
#define kzalloc_objs(var_or_type, count, ...) kcalloc((count), sizeof(var_or_type), 0)
#define kmalloc_objs(var_or_type, count, ...) kcalloc((count), sizeof(var_or_type), 0)
#define kzalloc_obj(var_or_type, ...) kzalloc(sizeof(var_or_type), 0)

/* ---- atomics: one thread, so a plain int ---- */
typedef struct { int counter; } atomic_t;
#define ATOMIC_INIT(i) { (i) }
static inline int atomic_read(const atomic_t *v) { return v->counter; }
static inline void atomic_set(atomic_t *v, int i) { v->counter = i; }
/* The sums wrap as the kernel's do (it builds with -fno-strict-overflow). */
static inline int kc_wrap_add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
static inline int atomic_fetch_add(int i, atomic_t *v) { int o = v->counter; v->counter = kc_wrap_add(o, i); return o; }
static inline int atomic_add_return(int i, atomic_t *v) { v->counter = kc_wrap_add(v->counter, i); return v->counter; }
static inline int atomic_fetch_inc(atomic_t *v) { return atomic_fetch_add(1, v); }
static inline int atomic_inc_return(atomic_t *v) { return atomic_add_return(1, v); }
static inline void atomic_inc(atomic_t *v) { atomic_add_return(1, v); }
static inline void atomic_add(int i, atomic_t *v) { atomic_add_return(i, v); }
static inline void atomic_dec(atomic_t *v) { atomic_add_return(-1, v); }
#define atomic_fetch_inc_relaxed atomic_fetch_inc
#define atomic_inc_return_relaxed atomic_inc_return
#define atomic_read_acquire atomic_read

/* ---- bitmaps and find-bit (the semantics of lib/find_bit.c and lib/bitmap.c) ---- */
#define KC_LAST_WORD_MASK(nbits) (~0UL >> (-(nbits) & (BITS_PER_LONG - 1)))

static inline unsigned long kc_find_next_bit(const unsigned long *addr, unsigned long size,
					     unsigned long start)
{
	unsigned long idx, word;

	if (start >= size)
		return size;
	idx = start / BITS_PER_LONG;
	word = addr[idx] & (~0UL << (start % BITS_PER_LONG));
	while (!word) {
		if ((idx + 1) * BITS_PER_LONG >= size)
			return size;
		word = addr[++idx];
	}
	return min(idx * BITS_PER_LONG + (unsigned long)__builtin_ctzl(word), size);
}
#define find_next_bit(addr, size, off) kc_find_next_bit((addr), (size), (off))
#define find_first_bit(addr, size) kc_find_next_bit((addr), (size), 0)

static inline unsigned int kc_bitmap_weight(const unsigned long *a, const unsigned long *b,
					    unsigned int nbits)
{
	unsigned int k, w = 0;

	for (k = 0; k < nbits / BITS_PER_LONG; k++)
		w += __builtin_popcountl(a[k] & (b ? b[k] : ~0UL));
	if (nbits % BITS_PER_LONG)
		w += __builtin_popcountl(a[k] & (b ? b[k] : ~0UL) & KC_LAST_WORD_MASK(nbits));
	return w;
}

static inline void set_bit(long nr, unsigned long *addr) { addr[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG); }
static inline void clear_bit(long nr, unsigned long *addr) { addr[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG)); }
static inline bool test_bit(long nr, const unsigned long *addr) { return (addr[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG)) & 1; }
static inline bool test_and_clear_bit(long nr, unsigned long *addr)
{
	bool old = test_bit(nr, addr);

	clear_bit(nr, addr);
	return old;
}
static inline bool test_and_set_bit(long nr, unsigned long *addr)
{
	bool old = test_bit(nr, addr);

	set_bit(nr, addr);
	return old;
}
#define __set_bit set_bit
#define __clear_bit clear_bit
#define for_each_set_bit(bit, addr, size) \
	for ((bit) = find_next_bit((addr), (size), 0); (bit) < (size); \
	     (bit) = find_next_bit((addr), (size), (bit) + 1))

/* ---- cpumask ---- */
#define NR_CPUS 8192
struct cpumask { unsigned long bits[BITS_TO_LONGS(NR_CPUS)]; };
typedef struct cpumask *cpumask_var_t;
typedef struct cpumask cpumask_t;
#define cpumask_bits(maskp) ((maskp)->bits)

extern unsigned int nr_cpu_ids;
extern struct cpumask irqscope_kc_possible, irqscope_kc_present, irqscope_kc_online;
#define cpu_possible_mask ((const struct cpumask *)&irqscope_kc_possible)
#define cpu_present_mask ((const struct cpumask *)&irqscope_kc_present)
#define cpu_online_mask ((const struct cpumask *)&irqscope_kc_online)
#define small_cpumask_bits nr_cpu_ids
#define large_cpumask_bits nr_cpu_ids

static inline unsigned int cpumask_size(void) { return BITS_TO_LONGS(large_cpumask_bits) * sizeof(long); }
static inline bool zalloc_cpumask_var(cpumask_var_t *mask, gfp_t flags)
{
	(void)flags;
	*mask = calloc(1, sizeof(struct cpumask));
	return *mask != NULL;
}
#define alloc_cpumask_var zalloc_cpumask_var
static inline void free_cpumask_var(cpumask_var_t mask) { free(mask); }

static inline unsigned int cpumask_check(unsigned int cpu) { return cpu; }
static inline unsigned int cpumask_first(const struct cpumask *m) { return find_first_bit(m->bits, nr_cpu_ids); }
static inline unsigned int cpumask_next(int n, const struct cpumask *m) { return find_next_bit(m->bits, nr_cpu_ids, (unsigned long)(n + 1)); }
static inline unsigned int cpumask_last(const struct cpumask *m)
{
	unsigned int cpu, last = nr_cpu_ids;

	for (cpu = cpumask_first(m); cpu < nr_cpu_ids; cpu = cpumask_next(cpu, m))
		last = cpu;
	return last;
}
/* The first CPU after n, wrapping to the start (the two-argument form of v6.14 on). */
static inline unsigned int cpumask_next_wrap(int n, const struct cpumask *m)
{
	unsigned int cpu = find_next_bit(m->bits, nr_cpu_ids, (unsigned long)(n + 1));

	return cpu < nr_cpu_ids ? cpu : cpumask_first(m);
}
/* The N-th set CPU counted from 0, nr_cpu_ids when there are not that many. */
static inline unsigned int cpumask_nth(unsigned int nth, const struct cpumask *m)
{
	unsigned int cpu;

	for (cpu = cpumask_first(m); cpu < nr_cpu_ids; cpu = cpumask_next(cpu, m))
		if (nth-- == 0)
			return cpu;
	return nr_cpu_ids;
}
static inline void cpumask_set_cpu(unsigned int cpu, struct cpumask *m) { set_bit(cpu, m->bits); }
static inline void cpumask_clear_cpu(int cpu, struct cpumask *m) { clear_bit(cpu, m->bits); }
static inline bool cpumask_test_cpu(int cpu, const struct cpumask *m) { return test_bit(cpu, m->bits); }
static inline bool cpumask_test_and_clear_cpu(int cpu, struct cpumask *m) { return test_and_clear_bit(cpu, m->bits); }
static inline bool cpumask_test_and_set_cpu(int cpu, struct cpumask *m) { return test_and_set_bit(cpu, m->bits); }
static inline void cpumask_clear(struct cpumask *m) { memset(m->bits, 0, cpumask_size()); }
static inline void cpumask_copy(struct cpumask *d, const struct cpumask *s) { memcpy(d->bits, s->bits, cpumask_size()); }
static inline unsigned int cpumask_weight(const struct cpumask *m) { return kc_bitmap_weight(m->bits, NULL, nr_cpu_ids); }
static inline unsigned int cpumask_weight_and(const struct cpumask *a, const struct cpumask *b)
{
	return kc_bitmap_weight(a->bits, b->bits, nr_cpu_ids);
}
static inline bool cpumask_empty(const struct cpumask *m) { return cpumask_first(m) >= nr_cpu_ids; }

/* Binary operations over the first nr_cpu_ids bits; the bits above stay as __bitmap_*() leave them. */
#define KC_BINOP(name, expr, ret)							\
static inline ret name(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)	\
{											\
	unsigned int k, lim = nr_cpu_ids / BITS_PER_LONG;				\
	unsigned long any = 0;								\
											\
	for (k = 0; k < lim; k++)							\
		any |= (d->bits[k] = (expr));						\
	if (nr_cpu_ids % BITS_PER_LONG)							\
		any |= (d->bits[k] = (expr) & KC_LAST_WORD_MASK(nr_cpu_ids));		\
	return (ret)(any != 0);								\
}
KC_BINOP(cpumask_and, a->bits[k] & b->bits[k], bool)
KC_BINOP(cpumask_andnot, a->bits[k] & ~b->bits[k], bool)
#undef KC_BINOP
static inline void cpumask_or(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	unsigned int k;

	for (k = 0; k < BITS_TO_LONGS(nr_cpu_ids); k++)
		d->bits[k] = a->bits[k] | b->bits[k];
}
static inline bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
	return kc_bitmap_weight(a->bits, b->bits, nr_cpu_ids) != 0;
}
static inline bool cpumask_subset(const struct cpumask *a, const struct cpumask *b)
{
	unsigned int cpu;

	for (cpu = cpumask_first(a); cpu < nr_cpu_ids; cpu = cpumask_next(cpu, a))
		if (!cpumask_test_cpu(cpu, b))
			return false;
	return true;
}
static inline bool cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{
	return cpumask_subset(a, b) && cpumask_subset(b, a);
}
static inline unsigned int cpumask_first_and(const struct cpumask *a, const struct cpumask *b)
{
	unsigned int cpu;

	for (cpu = cpumask_first(a); cpu < nr_cpu_ids; cpu = cpumask_next(cpu, a))
		if (cpumask_test_cpu(cpu, b))
			return cpu;
	return nr_cpu_ids;
}
#define for_each_cpu(cpu, mask) for_each_set_bit(cpu, cpumask_bits(mask), nr_cpu_ids)
#define for_each_possible_cpu(cpu) for_each_cpu((cpu), cpu_possible_mask)
#define for_each_present_cpu(cpu) for_each_cpu((cpu), cpu_present_mask)
#define for_each_online_cpu(cpu) for_each_cpu((cpu), cpu_online_mask)
#define num_possible_cpus() cpumask_weight(cpu_possible_mask)
#define num_present_cpus() cpumask_weight(cpu_present_mask)
#define num_online_cpus() cpumask_weight(cpu_online_mask)

/* ---- topology: tables the harness fills from irqscope's view of the machine ---- */
extern int irqscope_kc_cpu_to_node[NR_CPUS];
extern struct cpumask *irqscope_kc_sibling[NR_CPUS];
extern struct cpumask *irqscope_kc_cluster[NR_CPUS];
#define cpu_to_node(cpu) (irqscope_kc_cpu_to_node[(cpu)])
#define topology_sibling_cpumask(cpu) ((const struct cpumask *)irqscope_kc_sibling[(cpu)])
#define topology_cluster_cpumask(cpu) ((const struct cpumask *)irqscope_kc_cluster[(cpu)])

/* ---- nodemask (NODES_SHIFT 10) ---- */
#define NODES_SHIFT 10
#define MAX_NUMNODES (1 << NODES_SHIFT)
#define NUMA_NO_NODE (-1)
typedef struct { unsigned long bits[BITS_TO_LONGS(MAX_NUMNODES)]; } nodemask_t;
#define NODE_MASK_NONE ((nodemask_t) { { 0 } })
extern unsigned int nr_node_ids;
extern nodemask_t irqscope_kc_node_possible;

static inline unsigned int kc_first_node(const nodemask_t *m)
{
	return min_t(unsigned int, MAX_NUMNODES, find_first_bit(m->bits, MAX_NUMNODES));
}
static inline unsigned int kc_next_node(int n, const nodemask_t *m)
{
	return min_t(unsigned int, MAX_NUMNODES, find_next_bit(m->bits, MAX_NUMNODES, (unsigned long)(n + 1)));
}
static inline unsigned int kc_next_node_in(int n, const nodemask_t *m)
{
	unsigned int r = kc_next_node(n, m);

	return r == MAX_NUMNODES ? kc_first_node(m) : r;
}
#define first_node(src) kc_first_node(&(src))
#define next_node(n, src) kc_next_node((n), &(src))
#define next_node_in(n, src) kc_next_node_in((n), &(src))
#define node_set(node, dst) set_bit((node), (dst).bits)
#define node_clear(node, dst) clear_bit((node), (dst).bits)
#define node_isset(node, src) test_bit((node), (src).bits)
#define nodes_clear(dst) memset(&(dst), 0, sizeof(dst))
#define nodes_weight(src) kc_bitmap_weight((src).bits, NULL, MAX_NUMNODES)
#define for_each_node_mask(node, mask) \
	for ((node) = first_node(mask); (node) < MAX_NUMNODES; (node) = next_node((node), (mask)))
#define for_each_node(node) for_each_node_mask((node), irqscope_kc_node_possible)
#define for_each_possible_node(node) for_each_node(node)
#define num_possible_nodes() nodes_weight(irqscope_kc_node_possible)

/* ---- sort (lib/sort.c of the same tree, or irqscope's own heapsort of a chosen generation) ---- */
void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
	    swap_r_func_t swap_func, const void *priv);
void sort(void *base, size_t num, size_t size, cmp_func_t cmp_func, swap_func_t swap_func);
void sort_r_nonatomic(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
		      swap_r_func_t swap_func, const void *priv);
void sort_nonatomic(void *base, size_t num, size_t size, cmp_func_t cmp_func,
		    swap_func_t swap_func);
#define cmp_int(l, r) (((l) > (r)) - ((l) < (r)))

/*
 * include/linux/group_cpus.h: group_cpus_evenly() in whichever of its two forms the build's
 * lib/group_cpus.c defines (numgrps alone before the nummasks out-parameter, numgrps and
 * &nummasks after; the build says which with KC_GCE_NUMGRPS_ONLY). affinity.c and
 * blk-mq-cpumap.c are compiled with group_cpus_evenly renamed to the harness's wrapper,
 * which records the counter each call consumed.
 */
#ifdef KC_GCE_NUMGRPS_ONLY
struct cpumask *group_cpus_evenly(unsigned int numgrps);
#else
struct cpumask *group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks);
#endif

/* ---- include/linux/interrupt.h: what kernel/irq/affinity.c reads ---- */
#define IRQ_AFFINITY_MAX_SETS 4
struct irq_affinity {
	unsigned int pre_vectors;
	unsigned int post_vectors;
	unsigned int nr_sets;
	unsigned int set_size[IRQ_AFFINITY_MAX_SETS];
	void (*calc_sets)(struct irq_affinity *, unsigned int nvecs);
	void *priv;
};
struct irq_affinity_desc {
	struct cpumask mask;
	unsigned int is_managed : 1;
};
/* Every CPU, or irqaffinity= plus the boot CPU (kernel/irq/irqdesc.c); the harness sets it. */
extern cpumask_var_t irq_default_affinity;
struct irq_affinity_desc *irq_create_affinity_masks(unsigned int nvecs, struct irq_affinity *affd);
unsigned int irq_calc_affinity_vectors(unsigned int minvec, unsigned int maxvec,
				       const struct irq_affinity *affd);
static inline void cpumask_setall(struct cpumask *m) { memset(m->bits, 0xff, sizeof(m->bits)); }

/* ---- include/linux/sched/isolation.h: housekeeping, HK_TYPE_MANAGED_IRQ from isolcpus= ---- */
enum hk_type {
	HK_TYPE_DOMAIN,
	HK_TYPE_MANAGED_IRQ,
	HK_TYPE_KERNEL_NOISE,
	HK_TYPE_IO_QUEUE,
	HK_TYPE_MAX
};
/* The HK_TYPE_MANAGED_IRQ housekeeping CPUs when isolcpus=managed_irq,... is set, else NULL. */
extern const struct cpumask *irqscope_kc_managed_irq;
static inline bool housekeeping_enabled(enum hk_type type)
{
	return type == HK_TYPE_MANAGED_IRQ && irqscope_kc_managed_irq;
}
static inline const struct cpumask *housekeeping_cpumask(enum hk_type type)
{
	return housekeeping_enabled(type) ? irqscope_kc_managed_irq : cpu_possible_mask;
}
static inline bool housekeeping_test_cpu(int cpu, enum hk_type type)
{
	return cpumask_test_cpu(cpu, housekeeping_cpumask(type));
}

/* ---- block/blk-mq.h, include/linux/device/bus.h: what block/blk-mq-cpumap.c reads ---- */
#define min_not_zero(x, y) ({ __typeof__(x) _kc_a = (x); __typeof__(y) _kc_b = (y); \
	_kc_a == 0 ? _kc_b : (_kc_b == 0 ? _kc_a : min(_kc_a, _kc_b)); })
struct device;
struct bus_type {
	const struct cpumask *(*irq_get_affinity)(struct device *dev, unsigned int irq_vec);
};
struct device {
	const struct bus_type *bus;
};
struct blk_mq_queue_map {
	unsigned int *mq_map;
	unsigned int nr_queues;
	unsigned int queue_offset;
};
void blk_mq_map_queues(struct blk_mq_queue_map *qmap);
void blk_mq_map_hw_queues(struct blk_mq_queue_map *qmap, struct device *dev, unsigned int offset);
int blk_mq_hw_queue_to_node(struct blk_mq_queue_map *qmap, unsigned int index);
unsigned int blk_mq_num_possible_queues(unsigned int max_queues);
unsigned int blk_mq_num_online_queues(unsigned int max_queues);
#endif /* IRQSCOPE_KC_H */
