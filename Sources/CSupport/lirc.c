// `-i`: LIRC button presses through Debian's liblirc_client, loaded only when -i is given (a player
// without a remote never maps it). The library's calls as its header declares them.

#include "CSupport.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

struct lirc_config;

static struct {
  int (*init)(const char *program, int verbose);
  int (*readconfig)(const char *file, struct lirc_config **config, int (*check)(char *));
  int (*nextcode)(char **code);
  int (*code2char)(struct lirc_config *config, char *code, char **string);
} lirc;

static struct lirc_config *config;

int slimplay_lirc_open(const char *program, const char *lircrc) {
  void *library = dlopen("liblirc_client.so.0", RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) return -1;
  lirc.init = (int (*)(const char *, int))dlsym(library, "lirc_init");
  lirc.readconfig = (int (*)(const char *, struct lirc_config **, int (*)(char *)))dlsym(library, "lirc_readconfig");
  lirc.nextcode = (int (*)(char **))dlsym(library, "lirc_nextcode");
  lirc.code2char = (int (*)(struct lirc_config *, char *, char **))dlsym(library, "lirc_code2char");
  if (!lirc.init || !lirc.readconfig || !lirc.nextcode || !lirc.code2char) return -1;
  if (lirc.init(program, 0) < 0) return -2;
  // Without a readable lircrc the buttons' own names still work.
  if (lirc.readconfig(lircrc, &config, NULL) != 0) {
    config = NULL;
    return 1;
  }
  return 0;
}

int slimplay_lirc_next(char *line, long line_size, char *command, long command_size) {
  char *code = NULL;
  if (lirc.nextcode == NULL || lirc.nextcode(&code) != 0) return -1;
  line[0] = command[0] = 0;
  if (code == NULL) return 0;  // an event for another program
  strncpy(line, code, line_size - 1);
  line[line_size - 1] = 0;
  char *string = NULL;
  // Every lircrc entry for this button in turn; the last one that names something counts.
  while (config != NULL && lirc.code2char(config, code, &string) == 0 && string != NULL) {
    strncpy(command, string, command_size - 1);
    command[command_size - 1] = 0;
  }
  free(code);
  return 0;
}
