// SPDX-License-Identifier: MIT
/* purge-bench: the order the layouts purge their pieces in.  Addresses
 * only, no memory touched, so the unit test checks it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

uint64_t bench_rand_seed(unsigned seed)
{
	return 0x9e3779b97f4a7c15ull ^ seed; /* never 0, which xorshift would keep */
}

/* xorshift64: the same sequence for the same --seed. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Fisher-Yates. */
void bench_shuffle(struct iovec *v, size_t n, uint64_t *rs)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(next_rand(rs) % i);
		struct iovec t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* --layout frames: frames_at_once frames are being freed at a time (the
 * window); each piece comes from a random one of them, in random order
 * within its frame, and a finished frame makes room for the next, the
 * frames coming in shuffled order.  An allocator's free runs arrive like
 * this: never a whole frame at once, never one frame alone. */
struct window {
	struct iovec *frames; /* every frame, in the order they enter */
	struct iovec *slots;  /* [k][per]: the pieces of the frames being freed */
	size_t *left;         /* [k]: pieces of each slot not yet taken */
	size_t nframes, per, piece, next, active;
};

/* The next frame's pieces, shuffled, into slot s. */
static void window_enter(struct window *win, size_t s, uint64_t *rs)
{
	const struct iovec *f = &win->frames[win->next++];
	struct iovec *slot = win->slots + s * win->per;
	for (size_t i = 0; i < win->per; i++)
		slot[i] = (struct iovec){(char *)f->iov_base + i * win->piece, win->piece};
	bench_shuffle(slot, win->per, rs);
	win->left[s] = win->per;
}

static int window_init(struct window *win, char *base, const struct bench_opts *o, uint64_t *rs)
{
	size_t k;
	win->nframes = o->size / o->frame;
	win->per = o->frame / o->piece;
	win->piece = o->piece;
	k = o->frames_at_once < win->nframes ? o->frames_at_once : win->nframes;
	win->frames = calloc(win->nframes, sizeof(*win->frames));
	win->slots = calloc(k * win->per, sizeof(*win->slots));
	win->left = calloc(k, sizeof(*win->left));
	if (!win->frames || !win->slots || !win->left)
		return -ENOMEM;
	for (size_t f = 0; f < win->nframes; f++)
		win->frames[f] = (struct iovec){base + f * o->frame, o->frame};
	bench_shuffle(win->frames, win->nframes, rs);
	for (; win->active < k; win->active++)
		window_enter(win, win->active, rs);
	return 0;
}

/* A piece from a random frame of the window; refill or shrink it. */
static struct iovec window_take(struct window *win, uint64_t *rs)
{
	size_t s = (size_t)(next_rand(rs) % win->active);
	struct iovec v = win->slots[s * win->per + --win->left[s]];
	if (win->left[s])
		return v;
	if (win->next < win->nframes) {
		window_enter(win, s, rs);
		return v;
	}
	win->active--; /* no frame left to enter: the last slot moves in */
	memcpy(win->slots + s * win->per, win->slots + win->active * win->per,
	       win->per * sizeof(*win->slots));
	win->left[s] = win->left[win->active];
	return v;
}

int bench_order_frames(struct iovec *out, char *base, const struct bench_opts *o, uint64_t *rs)
{
	struct window win = {0};
	int ret = window_init(&win, base, o, rs);
	for (size_t i = 0; !ret && i < o->size / o->piece; i++)
		out[i] = window_take(&win, rs);
	free(win.frames);
	free(win.slots);
	free(win.left);
	return ret;
}
