// The stdio callback sets vorbisfile.h would define in every file that includes it: unused here.
#define OV_EXCLUDE_STATIC_CALLBACKS
#include <vorbis/vorbisfile.h>
