// One output line of a GPIO chip, through the kernel's character-device interface (v2), for the
// amplifier relay (-G). The line stays requested while the descriptor is open.
#include "CSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int slimplay_gpio_request_output(const char *chip_path, unsigned line, int active_low, const char *consumer) {
  int chip = open(chip_path, O_RDWR | O_CLOEXEC);
  if (chip < 0) return -errno;
  struct gpio_v2_line_request request;
  memset(&request, 0, sizeof request);
  request.offsets[0] = line;
  request.num_lines = 1;
  // Requested inactive: the amplifier starts off, as squeezelite's relay does.
  request.config.flags = GPIO_V2_LINE_FLAG_OUTPUT | (active_low ? GPIO_V2_LINE_FLAG_ACTIVE_LOW : 0);
  strncpy(request.consumer, consumer, sizeof request.consumer - 1);
  int result = ioctl(chip, GPIO_V2_GET_LINE_IOCTL, &request);
  int failure = errno;
  close(chip);
  if (result < 0) return -failure;
  return request.fd;
}

int slimplay_gpio_set(int line_fd, int active) {
  struct gpio_v2_line_values values;
  memset(&values, 0, sizeof values);
  values.mask = 1;
  values.bits = active ? 1 : 0;
  return ioctl(line_fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &values) < 0 ? -errno : 0;
}
