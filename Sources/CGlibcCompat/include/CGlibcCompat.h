// Nothing to import: the target only supplies link-time symbols (see glibc_compat.c).
#ifndef SLIMPLAY_CGLIBCCOMPAT_H
#define SLIMPLAY_CGLIBCCOMPAT_H
#endif
