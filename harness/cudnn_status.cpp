#include "harness/cudnn_status.h"

namespace convtune {

std::string last_cudnn_message() {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  return detail;
}

std::string cudnn_message(cudnnStatus_t s) {
  std::string msg = cudnnGetErrorString(s);
  const std::string detail = last_cudnn_message();
  if (!detail.empty()) msg += " (last cuDNN message: " + detail + ")";
  return msg;
}

}  // namespace convtune
