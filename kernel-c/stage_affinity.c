// SPDX-License-Identifier: GPL-2.0-only
/*
 * stage_affinity.c - compiles a tree's kernel/irq/affinity.c (KC_AFFINITY_SOURCE) for irqscope's
 * harness, its group_cpus_evenly() calls going to the harness's wrapper, which records the
 * counter value each call consumed.
 */
#define group_cpus_evenly kc_traced_group_cpus_evenly
#include KC_AFFINITY_SOURCE
