#include <opus/opus.h>
#include <opusfile.h>
