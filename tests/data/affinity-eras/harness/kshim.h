/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stand-ins for the kernel headers that kernel/irq/affinity.c, lib/group_cpus.c and lib/sort.c
 * include, so Debian's copies of those three files build and run in user space (irqscope's
 * tests/data/affinity-eras/gen.sh). Written for irqscope; no kernel header is copied here.
 *
 * What it stands for: an x86-64 SMP kernel (CONFIG_SMP, CONFIG_64BIT) with cpumask_var_t as a
 * pointer (CONFIG_CPUMASK_OFFSTACK), room for KSHIM_NR_CPUS CPUs and KSHIM_MAX_NUMNODES nodes.
 * Every cpumask walk stops at nr_cpu_ids, as the kernel's does. The machine (possible and
 * present CPUs, each CPU's node, SMT siblings and cluster) is set by the harness before a
 * call. WARN_ON and WARN_ON_ONCE count into kshim_warnings instead of printing.
 */
#ifndef KSHIM_H
#define KSHIM_H

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
typedef int32_t s32;

#define KSHIM_NR_CPUS 512
#define KSHIM_MAX_NUMNODES 64
#define KSHIM_WORDS (KSHIM_NR_CPUS / 64)

#undef __always_inline
#define __always_inline inline __attribute__((always_inline))
#undef __attribute_const__
#define __attribute_const__ __attribute__((const))
#define __init
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define GFP_KERNEL 0
#define data_race(expr) (expr)
#define cond_resched() ((void)0)
#define might_sleep() ((void)0)
#define cpus_read_lock() ((void)0)
#define cpus_read_unlock() ((void)0)

#define min(a, b) ({ __typeof__(a) _ka = (a); __typeof__(b) _kb = (b); _ka < _kb ? _ka : _kb; })
#define max(a, b) ({ __typeof__(a) _ka = (a); __typeof__(b) _kb = (b); _ka > _kb ? _ka : _kb; })
#define min_t(t, a, b) ({ t _ka = (a); t _kb = (b); _ka < _kb ? _ka : _kb; })
#define max_t(t, a, b) ({ t _ka = (a); t _kb = (b); _ka > _kb ? _ka : _kb; })

extern unsigned long kshim_warnings;
#define WARN_ON(cond) ({ int _kc = !!(cond); if (_kc) kshim_warnings++; _kc; })
#define WARN_ON_ONCE(cond) WARN_ON(cond)
#define BUG_ON(cond) do { if (cond) abort(); } while (0)

/* slab */
static inline void *kcalloc(size_t n, size_t size, int gfp) { (void)gfp; return calloc(n, size); }
static inline void *kzalloc(size_t size, int gfp) { (void)gfp; return calloc(1, size); }
/* The 7.x helper: COUNT zeroed objects of sizeof(VAR_OR_TYPE). */
#define kzalloc_objs(var_or_type, count, ...) calloc((count), sizeof(var_or_type))
static inline void kfree(const void *p) { free((void *)p); }

/* sort */
typedef int (*cmp_func_t)(const void *a, const void *b);
typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_func_t)(void *a, void *b, int size);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);
void sort(void *base, size_t num, size_t size, cmp_func_t cmp, swap_func_t swap);
void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp, swap_r_func_t swap, const void *priv);

/* cpumask */
struct cpumask { unsigned long bits[KSHIM_WORDS]; };
typedef struct cpumask cpumask_t;
typedef struct cpumask *cpumask_var_t;
extern unsigned int nr_cpu_ids;
extern unsigned int nr_node_ids;

static inline bool kshim_test(const struct cpumask *m, unsigned int cpu)
{
	return cpu < KSHIM_NR_CPUS && ((m->bits[cpu / 64] >> (cpu % 64)) & 1);
}
static inline void cpumask_set_cpu(unsigned int cpu, struct cpumask *m) { m->bits[cpu / 64] |= 1UL << (cpu % 64); }
static inline void cpumask_clear_cpu(unsigned int cpu, struct cpumask *m) { m->bits[cpu / 64] &= ~(1UL << (cpu % 64)); }
static inline bool cpumask_test_cpu(unsigned int cpu, const struct cpumask *m) { return kshim_test(m, cpu); }
static inline bool cpumask_test_and_clear_cpu(unsigned int cpu, struct cpumask *m)
{
	bool was = kshim_test(m, cpu);
	cpumask_clear_cpu(cpu, m);
	return was;
}
/* The first set bit at or after `from`, nr_cpu_ids when there is none. */
static inline unsigned int kshim_find(const struct cpumask *m, unsigned int from)
{
	for (unsigned int c = from; c < nr_cpu_ids; c++)
		if (kshim_test(m, c))
			return c;
	return nr_cpu_ids;
}
static inline unsigned int cpumask_first(const struct cpumask *m) { return kshim_find(m, 0); }
static inline unsigned int cpumask_next(int n, const struct cpumask *m) { return kshim_find(m, (unsigned int)(n + 1)); }
#define for_each_cpu(cpu, mask) \
	for ((cpu) = cpumask_first(mask); (cpu) < nr_cpu_ids; (cpu) = cpumask_next((cpu), (mask)))
static inline unsigned int cpumask_weight(const struct cpumask *m)
{
	unsigned int n = 0;
	for (unsigned int c = 0; c < nr_cpu_ids; c++)
		n += kshim_test(m, c);
	return n;
}
static inline unsigned int cpumask_weight_and(const struct cpumask *a, const struct cpumask *b)
{
	unsigned int n = 0;
	for (unsigned int c = 0; c < nr_cpu_ids; c++)
		n += kshim_test(a, c) && kshim_test(b, c);
	return n;
}
static inline bool cpumask_empty(const struct cpumask *m) { return cpumask_first(m) >= nr_cpu_ids; }
static inline bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b) { return cpumask_weight_and(a, b) > 0; }
static inline void cpumask_copy(struct cpumask *d, const struct cpumask *s) { memcpy(d, s, sizeof(*d)); }
static inline void cpumask_clear(struct cpumask *m) { memset(m, 0, sizeof(*m)); }
static inline void cpumask_setall(struct cpumask *m)
{
	cpumask_clear(m);
	for (unsigned int c = 0; c < nr_cpu_ids; c++)
		cpumask_set_cpu(c, m);
}
static inline bool cpumask_and(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (int w = 0; w < KSHIM_WORDS; w++)
		d->bits[w] = a->bits[w] & b->bits[w];
	return !cpumask_empty(d);
}
static inline void cpumask_or(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (int w = 0; w < KSHIM_WORDS; w++)
		d->bits[w] = a->bits[w] | b->bits[w];
}
static inline bool cpumask_andnot(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (int w = 0; w < KSHIM_WORDS; w++)
		d->bits[w] = a->bits[w] & ~b->bits[w];
	return !cpumask_empty(d);
}
static inline bool zalloc_cpumask_var(cpumask_var_t *m, int gfp)
{
	(void)gfp;
	*m = calloc(1, sizeof(struct cpumask));
	return *m != NULL;
}
static inline bool alloc_cpumask_var(cpumask_var_t *m, int gfp) { return zalloc_cpumask_var(m, gfp); }
static inline void free_cpumask_var(cpumask_var_t m) { free(m); }

/* The machine, filled by the harness. */
extern struct cpumask kshim_possible, kshim_present, kshim_sibling[KSHIM_NR_CPUS], kshim_cluster[KSHIM_NR_CPUS];
extern int kshim_node[KSHIM_NR_CPUS];
#define cpu_possible_mask ((const struct cpumask *)&kshim_possible)
#define cpu_present_mask ((const struct cpumask *)&kshim_present)
#define for_each_possible_cpu(cpu) for_each_cpu((cpu), cpu_possible_mask)
static inline int cpu_to_node(int cpu) { return kshim_node[cpu]; }
static inline const struct cpumask *topology_sibling_cpumask(unsigned int cpu) { return &kshim_sibling[cpu]; }
static inline const struct cpumask *topology_cluster_cpumask(unsigned int cpu) { return &kshim_cluster[cpu]; }

/* nodemask: every node id below nr_node_ids is possible. */
typedef struct { unsigned long bits[1]; } nodemask_t;
#define NODE_MASK_NONE ((nodemask_t){ { 0 } })
#define node_set(node, dst) ((dst).bits[0] |= 1UL << (node))
#define for_each_node_mask(node, mask) \
	for ((node) = 0; (node) < KSHIM_MAX_NUMNODES; (node)++) \
		if ((((mask).bits[0]) >> (node)) & 1)
#define for_each_node(node) for ((node) = 0; (node) < (int)nr_node_ids; (node)++)

/* interrupt.h: struct irq_affinity and its descriptor */
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
extern cpumask_var_t irq_default_affinity;
struct irq_affinity_desc *irq_create_affinity_masks(unsigned int nvecs, struct irq_affinity *affd);
unsigned int irq_calc_affinity_vectors(unsigned int minvec, unsigned int maxvec, const struct irq_affinity *affd);

/* group_cpus.h: the one-argument form before the nummasks change (KSHIM_NUMMASKS unset). */
#ifdef KSHIM_NUMMASKS
struct cpumask *group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks);
#else
struct cpumask *group_cpus_evenly(unsigned int numgrps);
#endif

#endif
