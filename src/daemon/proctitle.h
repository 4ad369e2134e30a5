/*
 * proctitle.h - process titles ("ensignd: worker 2") as ps(1) shows them.
 *
 * proctitle_init must run first thing in main, before anything reads
 * argv or environ past argv[0]: it moves the environment out of the way so
 * the title can use the contiguous argv/environ area.
 */
#ifndef ENSIGN_PROCTITLE_H
#define ENSIGN_PROCTITLE_H

void proctitle_init(int argc, char **argv);
void proctitle_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
