/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kc.h - just enough of the kernel's headers for lib/group_cpus.c and lib/sort.c to build
 * and run as ordinary user-space C, for irqscope's golden vectors (make-vectors.sh).
 *
 * Written for irqscope; no kernel header text. The semantics follow the kernel's own:
 * cpumask and nodemask helpers walk bitmaps of nr_cpu_ids / MAX_NUMNODES bits as
 * include/linux/cpumask.h, bitmap.h and lib/find_bit.c do (a search past the end returns the
 * size); kcalloc / kzalloc_objs / zalloc_cpumask_var are calloc; WARN_ON counts.
 * The topology the kernel code reads (cpu_to_node, topology_sibling_cpumask,
 * topology_cluster_cpumask, cpu_possible_mask, cpu_present_mask, the possible nodes) is a
 * set of tables the harness (harness.c) fills from its input: one mask per CPU, as the
 * kernel keeps one per-CPU cpumask.
 */
#ifndef KC_H
#define KC_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_SMP 1
#define CONFIG_64BIT 1

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define KC_NR_CPUS 8192
#define KC_MAX_NUMNODES 1024
#define KC_LONG_BITS 64
#define KC_LONGS(bits) (((bits) + KC_LONG_BITS - 1) / KC_LONG_BITS)

#ifndef __attribute_const__
#define __attribute_const__ __attribute__((__const__))
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define IS_ENABLED(option) 0
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define GFP_KERNEL 0
#define data_race(expr) (expr)
#define cond_resched() do { } while (0)

#define min(a, b) ({ __typeof__(a) a_ = (a); __typeof__(b) b_ = (b); a_ < b_ ? a_ : b_; })
#define max(a, b) ({ __typeof__(a) a_ = (a); __typeof__(b) b_ = (b); a_ > b_ ? a_ : b_; })
#define min_t(t, a, b) ({ t a_ = (a); t b_ = (b); a_ < b_ ? a_ : b_; })
#define max_t(t, a, b) ({ t a_ = (a); t b_ = (b); a_ > b_ ? a_ : b_; })

extern unsigned long kc_warnings;
#define WARN_ON_ONCE(cond) ({ bool c_ = !!(cond); if (c_) kc_warnings++; c_; })
#define WARN_ON(cond) WARN_ON_ONCE(cond)

static inline void *kcalloc(size_t n, size_t size, int gfp) { (void)gfp; return calloc(n, size); }
static inline void kfree(const void *p) { free((void *)p); }
#define kzalloc_objs(var_or_type, count, ...) calloc((count), sizeof(var_or_type))

/* include/linux/types.h and sort.h */
typedef int (*cmp_func_t)(const void *a, const void *b);
typedef void (*swap_func_t)(void *a, void *b, int size);
typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);
void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
	    swap_r_func_t swap_func, const void *priv);
void sort(void *base, size_t num, size_t size, cmp_func_t cmp_func, swap_func_t swap_func);
void sort_r_nonatomic(void *base, size_t num, size_t size, cmp_r_func_t cmp_func,
		      swap_r_func_t swap_func, const void *priv);
void sort_nonatomic(void *base, size_t num, size_t size, cmp_func_t cmp_func,
		    swap_func_t swap_func);

/* Bitmaps: bit i of word i / 64. */
static inline unsigned long kc_find_next(const unsigned long *w, unsigned long size,
					 unsigned long start)
{
	for (unsigned long i = start; i < size; i++)
		if (w[i / KC_LONG_BITS] >> (i % KC_LONG_BITS) & 1)
			return i;
	return size;
}

static inline bool kc_test(const unsigned long *w, unsigned long i)
{
	return w[i / KC_LONG_BITS] >> (i % KC_LONG_BITS) & 1;
}

static inline void kc_set(unsigned long *w, unsigned long i)
{
	w[i / KC_LONG_BITS] |= 1UL << (i % KC_LONG_BITS);
}

static inline void kc_clear(unsigned long *w, unsigned long i)
{
	w[i / KC_LONG_BITS] &= ~(1UL << (i % KC_LONG_BITS));
}

/* cpumask (CONFIG_CPUMASK_OFFSTACK: cpumask_var_t is a pointer). */
struct cpumask { unsigned long bits[KC_LONGS(KC_NR_CPUS)]; };
typedef struct cpumask *cpumask_var_t;

extern unsigned int nr_cpu_ids;
extern unsigned int nr_node_ids;
extern struct cpumask kc_possible, kc_present;
#define cpu_possible_mask ((const struct cpumask *)&kc_possible)
#define cpu_present_mask ((const struct cpumask *)&kc_present)

static inline bool zalloc_cpumask_var(cpumask_var_t *m, int gfp)
{
	(void)gfp;
	*m = calloc(1, sizeof(struct cpumask));
	return *m != NULL;
}

static inline void free_cpumask_var(cpumask_var_t m) { free(m); }

static inline unsigned int cpumask_first(const struct cpumask *m)
{
	return kc_find_next(m->bits, nr_cpu_ids, 0);
}

static inline unsigned int cpumask_next(int n, const struct cpumask *m)
{
	return kc_find_next(m->bits, nr_cpu_ids, n + 1);
}

static inline void cpumask_set_cpu(unsigned int cpu, struct cpumask *m) { kc_set(m->bits, cpu); }
static inline void cpumask_clear_cpu(int cpu, struct cpumask *m) { kc_clear(m->bits, cpu); }

static inline bool cpumask_test_cpu(int cpu, const struct cpumask *m)
{
	return kc_test(m->bits, cpu);
}

static inline bool cpumask_test_and_clear_cpu(int cpu, struct cpumask *m)
{
	bool was = kc_test(m->bits, cpu);

	kc_clear(m->bits, cpu);
	return was;
}

/* Binary operations over the first nr_cpu_ids bits; the bits above stay zero. */
#define KC_EACH_CPU(i) for (unsigned int i = 0; i < nr_cpu_ids; i++)

static inline bool cpumask_and(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	bool any = false;
	struct cpumask r = { { 0 } };

	KC_EACH_CPU(i)
		if (kc_test(a->bits, i) && kc_test(b->bits, i)) {
			kc_set(r.bits, i);
			any = true;
		}
	*d = r;
	return any;
}

static inline bool cpumask_andnot(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	bool any = false;
	struct cpumask r = { { 0 } };

	KC_EACH_CPU(i)
		if (kc_test(a->bits, i) && !kc_test(b->bits, i)) {
			kc_set(r.bits, i);
			any = true;
		}
	*d = r;
	return any;
}

static inline void cpumask_or(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	struct cpumask r = { { 0 } };

	KC_EACH_CPU(i)
		if (kc_test(a->bits, i) || kc_test(b->bits, i))
			kc_set(r.bits, i);
	*d = r;
}

static inline void cpumask_copy(struct cpumask *d, const struct cpumask *s) { *d = *s; }

static inline bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
	KC_EACH_CPU(i)
		if (kc_test(a->bits, i) && kc_test(b->bits, i))
			return true;
	return false;
}

static inline bool cpumask_empty(const struct cpumask *m)
{
	return cpumask_first(m) >= nr_cpu_ids;
}

static inline unsigned int cpumask_weight(const struct cpumask *m)
{
	unsigned int w = 0;

	KC_EACH_CPU(i)
		w += kc_test(m->bits, i);
	return w;
}

static inline unsigned int cpumask_weight_and(const struct cpumask *a, const struct cpumask *b)
{
	unsigned int w = 0;

	KC_EACH_CPU(i)
		w += kc_test(a->bits, i) && kc_test(b->bits, i);
	return w;
}

#define for_each_cpu(cpu, mask) \
	for ((cpu) = cpumask_first(mask); (cpu) < nr_cpu_ids; (cpu) = cpumask_next((cpu), (mask)))
#define for_each_possible_cpu(cpu) for_each_cpu((cpu), cpu_possible_mask)

/* The machine, filled by the harness. */
extern int kc_cpu_node[KC_NR_CPUS];
extern struct cpumask *kc_sibling[KC_NR_CPUS];
extern struct cpumask *kc_cluster[KC_NR_CPUS];
#define cpu_to_node(cpu) (kc_cpu_node[(cpu)])
#define topology_sibling_cpumask(cpu) ((const struct cpumask *)kc_sibling[(cpu)])
#define topology_cluster_cpumask(cpu) ((const struct cpumask *)kc_cluster[(cpu)])

/* nodemask (include/linux/nodemask.h): for_each_node walks the possible nodes. */
typedef struct { unsigned long bits[KC_LONGS(KC_MAX_NUMNODES)]; } nodemask_t;
#define NODE_MASK_NONE ((nodemask_t) { { 0 } })
extern nodemask_t kc_node_possible;
#define node_set(node, mask) kc_set((mask).bits, (node))
#define first_node(mask) ((int)kc_find_next((mask).bits, KC_MAX_NUMNODES, 0))
#define next_node(n, mask) ((int)kc_find_next((mask).bits, KC_MAX_NUMNODES, (n) + 1))
#define for_each_node_mask(node, mask) \
	for ((node) = first_node(mask); (node) < KC_MAX_NUMNODES; (node) = next_node((node), (mask)))
#define for_each_node(node) for_each_node_mask((node), kc_node_possible)

/* include/linux/group_cpus.h: 6.12 has no nummasks out-parameter. */
#ifdef KC_GCE_NUMGRPS_ONLY
struct cpumask *group_cpus_evenly(unsigned int numgrps);
#else
struct cpumask *group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks);
#endif

#endif /* KC_H */
