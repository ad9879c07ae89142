/* SPDX-License-Identifier: GPL-2.0-only */
/* user-space stand-in for irqscope golden vectors: see ../kc.h */
#include <kc.h>
