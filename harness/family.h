// A family is one problem type: its shape (named integer dims with ranges), operands, float64
// references and dispatch constraints. Each family lives in its own folder under variants/ and
// registers itself with one line, as variants do; the harness knows families only through this class.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/problem.h"

namespace convtune {

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line, with the convention (e.g. cross-correlation)
  virtual std::vector<DimSpec> dims() const = 0;
  // Rules between dims beyond their ranges (e.g. m <= n in valid mode); throws InputError naming
  // `where`.<dim> and what is allowed.
  virtual void check(const Problem&, const std::string& /*where*/) const {}
  // The tolerance on the output, given a method's tolerance on its arithmetic (Variant::tolerance): the
  // same, unless an operation after the arithmetic changes the output's scale (a squashing activation).
  virtual Tolerance output_tolerance(const Problem&, const Tolerance& method) const { return method; }
  virtual std::vector<Operand> operands(const Problem& p) const = 0;  // inputs first, the output last
  virtual double direct_flops(const Problem& p) const = 0;            // 2 * (input, tap) pairs summed
  virtual Problem example() const = 0;  // a representative shape, for listings and tests
  // Small awkward shapes (odd, prime, edge cases) on which the GPU tests verify every variant.
  virtual std::vector<Problem> test_problems() const = 0;
  // Dims that must be equal for a measured shape to stand in for another in dispatch: those that are
  // compile-time in kernels or change the operation itself.
  virtual std::vector<std::string> constraint_dims() const = 0;
  // Dims an entry must equal to be used at all, not merely preferred: they decide what a config may do
  // (precision: whether TF32 math may run). A problem with no such entry gets the family's default.
  virtual std::vector<std::string> required_dims() const { return {}; }
  // Quantities the dispatch model derives from the dims (name, program), where no single dim shows what
  // decides the winner (a layer pass's GEMM extents). A program is postfix over the dims' names and
  // integers with + - * / (floor), e.g. "h pad_h 2 * + r - u / 1 +" (harness/dispatch_rules.h runs it).
  virtual std::vector<std::pair<std::string, std::string>> model_quantities() const { return {}; }

  // References in float64. The CPU one is simple and slow (it checks the GPU one in tests); the GPU one
  // checks full outputs at real sizes. Inputs in operands() order.
  virtual std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs) const = 0;
  virtual void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out,
                             cudaStream_t s) const = 0;
};

class FamilyRegistry {
 public:
  static FamilyRegistry& instance();
  void add(std::unique_ptr<Family> f);
  const Family* find(const std::string& name) const;
  const Family& get(const std::string& name) const;  // throws InputError naming the allowed families
  // A registered family's dims (taken once, at registration); null for an unknown family.
  const std::vector<DimSpec>* dims_of(const std::string& name) const;
  std::vector<const Family*> all() const;            // sorted by name
  std::string names_joined() const;

 private:
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<std::vector<DimSpec>> dims_;  // families_[i]'s dims
};

inline const Family& find_family(const std::string& name) { return FamilyRegistry::instance().get(name); }

inline std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs) {
  return p.type().cpu_reference(p, inputs);
}
inline void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out, cudaStream_t s) {
  p.type().gpu_reference(p, inputs, out, s);
}

// One line per family, in its folder: CONVTUNE_REGISTER_FAMILY(Conv1dFamily);
#define CONVTUNE_REGISTER_FAMILY(Type)                                      \
  static const bool convtune_family_registered_##Type = [] {                \
    ::convtune::FamilyRegistry::instance().add(std::make_unique<Type>());   \
    return true;                                                            \
  }()

}  // namespace convtune
