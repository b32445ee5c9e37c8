// The C API (include/weft-c/Weft.h): contexts, modules parsed from text and
// the training step's package in memory, through the same PackageCompiler
// as weft-compile. Diagnostics are collected as text per context.
#include "weft-c/Weft.h"

#include "weft/Conversion/WeftToPlan/BuildPlan.h"
#include "weft/Pipelines/PackageCompiler.h"
#include "weft/RegisterWeftDialects.h"
#include "weft/Target/GPU/Serialize.h"
#include "weft/Target/GPU/TuningTable.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>

using namespace mlir;

#ifndef WEFT_DEFAULT_TUNING_TABLE
#define WEFT_DEFAULT_TUNING_TABLE "bench/attention_tuning.json"
#endif

struct weft_context_impl {
  /// What the current call reported, as "file:line:col: error: ..." lines
  /// (declared first: the context, whose handler appends here, goes first).
  std::string diagnostics;
  std::unique_ptr<MLIRContext> context;
};

struct weft_module_impl {
  weft_context_impl *owner;
  OwningOpRef<ModuleOp> module;
};

namespace {

StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

/// "file:line:col" of the first file location inside `loc` (a name or a
/// call site wraps one), else the location as MLIR prints it.
void printLocation(llvm::raw_ostream &os, Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>()) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
    return;
  }
  os << loc;
}

void appendDiagnostic(std::string &out, Diagnostic &diag) {
  llvm::raw_string_ostream os(out);
  printLocation(os, diag.getLocation());
  os << ": " << severityName(diag.getSeverity()) << ": " << diag << "\n";
  for (Diagnostic &note : diag.getNotes()) {
    printLocation(os, note.getLocation());
    os << ": note: " << note << "\n";
  }
}

/// An error without a location (a bad option, a null argument).
weft_capi_status_t fail(weft_context_impl *ctx, weft_capi_status_t status,
                        const llvm::Twine &message) {
  if (ctx)
    ctx->diagnostics += ("error: " + message + "\n").str();
  return status;
}

/// `sm_<N>` or `sm_<N>a`, as ptxas and LLVM's NVPTX target spell them.
bool isGpuArchitecture(StringRef chip) {
  if (!chip.consume_front("sm_"))
    return false;
  chip.consume_back("a");
  return !chip.empty() && llvm::all_of(chip, llvm::isDigit);
}

struct OptionDefaults {
  std::string optimizer, remat, weightCopies, target;
  double lr, weightDecay;
  int64_t rematLayers;
};

const OptionDefaults &optionDefaults() {
  static const OptionDefaults defaults = [] {
    weft::TrainingPipelineOptions pipeline;
    weft::gpu::KernelEmitOptions kernels;
    return OptionDefaults{pipeline.optimizer,
                          pipeline.remat,
                          weft::stringifyWeightCopies(pipeline.weightCopies).str(),
                          kernels.chip,
                          pipeline.lr,
                          pipeline.weightDecay,
                          pipeline.rematLayers};
  }();
  return defaults;
}

/// Copies `bytes` into a buffer the caller frees (with a NUL after them).
bool copyOut(StringRef bytes, weft_buffer_t *out) {
  auto *data = static_cast<uint8_t *>(std::malloc(bytes.size() + 1));
  if (!data)
    return false;
  std::memcpy(data, bytes.data(), bytes.size());
  data[bytes.size()] = 0;
  *out = weft_buffer_t{data, bytes.size()};
  return true;
}

} // namespace

extern "C" {

const char *weftVersion(void) { return weft::gpu::kWeftVersion; }

weft_context_t weftContextCreate(void) {
  static std::once_flag passesRegistered;
  std::call_once(passesRegistered, [] { weft::registerWeftPasses(); });
  auto *ctx = new (std::nothrow) weft_context_impl();
  if (!ctx)
    return nullptr;
  DialectRegistry registry;
  weft::registerWeftDialects(registry);
  weft::gpu::registerGpuTargetDialects(registry);
  weft::registerPlanDialect(registry);
  ctx->context = std::make_unique<MLIRContext>(registry);
  // As weft-compile: a diagnostic names the op and the values, no IR dump.
  ctx->context->printOpOnDiagnostic(false);
  ctx->context->getDiagEngine().registerHandler(
      [ctx](Diagnostic &diag) { appendDiagnostic(ctx->diagnostics, diag); });
  return ctx;
}

void weftContextDestroy(weft_context_t context) { delete context; }

const char *weftGetDiagnostics(weft_context_t context) {
  return context ? context->diagnostics.c_str() : "";
}

weft_capi_status_t weftModuleParseNamed(weft_context_t context, const char *text,
                                        size_t length, const char *source_name,
                                        weft_module_t *module) {
  if (!context)
    return WEFT_CAPI_ERROR_INVALID_ARGUMENT;
  context->diagnostics.clear();
  if (!module || (!text && length))
    return fail(context, WEFT_CAPI_ERROR_INVALID_ARGUMENT,
                "weftModuleParse needs text (or length 0) and a module to set");
  *module = nullptr;
  // The lexer stops at a NUL: parse a terminated copy of the caller's bytes.
  std::string source = text ? std::string(text, length) : std::string();
  StringRef name = source_name ? source_name : "<input>";
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(source, ParserConfig(context->context.get()), name);
  if (!parsed)
    return WEFT_CAPI_ERROR_PARSE;
  *module = new weft_module_impl{context, std::move(parsed)};
  return WEFT_CAPI_OK;
}

weft_capi_status_t weftModuleParse(weft_context_t context, const char *text,
                                   size_t length, weft_module_t *module) {
  return weftModuleParseNamed(context, text, length, nullptr, module);
}

void weftModuleDestroy(weft_module_t module) { delete module; }

weft_capi_status_t weftModulePrint(weft_module_t module, weft_buffer_t *text) {
  if (!module || !text)
    return WEFT_CAPI_ERROR_INVALID_ARGUMENT;
  *text = weft_buffer_t{nullptr, 0};
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->module->print(os);
  if (!copyOut(printed, text))
    return fail(module->owner, WEFT_CAPI_ERROR_COMPILE, "out of memory");
  return WEFT_CAPI_OK;
}

void weftTrainingOptionsInit(weft_training_options_t *options) {
  if (!options)
    return;
  const OptionDefaults &defaults = optionDefaults();
  *options = weft_training_options_t{};
  options->optimizer = defaults.optimizer.c_str();
  options->lr = defaults.lr;
  options->weight_decay = defaults.weightDecay;
  options->remat = defaults.remat.c_str();
  options->remat_layers = defaults.rematLayers;
  options->weight_copies = defaults.weightCopies.c_str();
  options->target = defaults.target.c_str();
  options->loss_chunks = 1;
}

} // extern "C"

namespace {

/// The step of options->entry (its training step, or with `inference` the
/// forward itself) and its package, for the two weftCompile* calls.
weft_capi_status_t compileStep(weft_module_t module, const weft_training_options_t *options,
                               weft_buffer_t *package, bool inference) {
  if (!module)
    return WEFT_CAPI_ERROR_INVALID_ARGUMENT;
  weft_context_impl *ctx = module->owner;
  ctx->diagnostics.clear();
  StringRef function = inference ? "weftCompileInferenceStep" : "weftCompileTrainingStep";
  if (!options || !package)
    return fail(ctx, WEFT_CAPI_ERROR_INVALID_ARGUMENT,
                function + " needs options and a package buffer to set");
  *package = weft_buffer_t{nullptr, 0};
  if (!options->entry || !*options->entry)
    return fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION,
                inference ? "entry is required: the forward function to package"
                          : "entry is required: the forward function that returns the loss");
  ModuleOp input = *module->module;
  auto entry = input.lookupSymbol<func::FuncOp>(options->entry);
  if (!entry || entry.isExternal())
    return fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION,
                "entry: no function @" + StringRef(options->entry) +
                    " with a body in the module; functions: " +
                    weft::listDefinedFunctions(input));

  const OptionDefaults &defaults = optionDefaults();
  auto orDefault = [](const char *value, const std::string &fallback) {
    return value ? std::string(value) : fallback;
  };
  weft::TrainingPipelineOptions pipeline;
  pipeline.entry = options->entry;
  pipeline.optimizer = orDefault(options->optimizer, defaults.optimizer);
  pipeline.lr = options->lr;
  pipeline.weightDecay = options->weight_decay;
  pipeline.memoryBudget = orDefault(options->memory_budget, "");
  pipeline.remat = orDefault(options->remat, defaults.remat);
  pipeline.rematLayers = options->remat_layers;
  pipeline.fuseElementwise = options->fuse_elementwise != 0;
  pipeline.grid = orDefault(options->grid, "");
  pipeline.sequenceParallel = options->sequence_parallel != 0;
  pipeline.inference = inference;
  pipeline.bindArguments = orDefault(options->bind_arguments, "none");
  pipeline.lossChunks = options->loss_chunks;
  std::string copies = orDefault(options->weight_copies, defaults.weightCopies);
  bool autoCopies = false;
  if (failed(weft::setWeightCopies(pipeline, copies, autoCopies)))
    return fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION,
                "weight_copies must be converted, carried, split or auto, got '" + copies +
                    "'");
  weft::setPackageDefaults(pipeline);

  weft::gpu::KernelEmitOptions kernels;
  kernels.chip = orDefault(options->target, defaults.target);
  if (!isGpuArchitecture(kernels.chip))
    return fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION,
                "target must be a GPU architecture sm_<N> or sm_<N>a (e.g. sm_90a), got '" +
                    kernels.chip + "'");
  std::optional<std::string> named;
  if (options->tuning_table)
    named = options->tuning_table;
  std::string tablePath = weft::resolveTuningTablePath(named, WEFT_DEFAULT_TUNING_TABLE);
  std::optional<weft::gpu::AttentionTuningTable> table;
  if (!tablePath.empty()) {
    std::string message;
    FailureOr<weft::gpu::AttentionTuningTable> loaded =
        weft::gpu::AttentionTuningTable::load(tablePath, message);
    if (failed(loaded))
      return fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION, "tuning_table: " + message);
    table = std::move(*loaded);
    kernels.tuningTable = &*table;
  }

  // The pipeline rewrites its module: compile a copy, the caller's stays.
  OwningOpRef<ModuleOp> step(cast<ModuleOp>(input->clone()));
  weft::PipelineHooks hooks;
  hooks.reportBadOption = [ctx](const llvm::Twine &message) {
    fail(ctx, WEFT_CAPI_ERROR_INVALID_OPTION, message);
  };
  weft::TrainingCompiler compiler(*ctx->context, pipeline, autoCopies, std::move(hooks));
  if (failed(compiler.run(step)))
    return compiler.failedOnOption() ? WEFT_CAPI_ERROR_INVALID_OPTION
                                     : WEFT_CAPI_ERROR_COMPILE;
  std::string stepName = weft::getStepFunctionName(options->entry);
  auto stepFunc = step->lookupSymbol<func::FuncOp>(stepName);
  if (!stepFunc)
    return fail(ctx, WEFT_CAPI_ERROR_COMPILE, "the pipeline built no @" + stepName);
  std::string notes;
  llvm::raw_string_ostream notesStream(notes);
  FailureOr<std::string> bytes = weft::buildPackageBytes(stepFunc, kernels, notesStream);
  ctx->diagnostics += notes;
  if (failed(bytes))
    return WEFT_CAPI_ERROR_COMPILE;
  if (!copyOut(*bytes, package))
    return fail(ctx, WEFT_CAPI_ERROR_COMPILE, "out of memory for a package of " +
                                                  llvm::Twine(bytes->size()) + " bytes");
  return WEFT_CAPI_OK;
}

} // namespace

extern "C" {

weft_capi_status_t weftCompileTrainingStep(weft_module_t module,
                                           const weft_training_options_t *options,
                                           weft_buffer_t *package) {
  return compileStep(module, options, package, /*inference=*/false);
}

weft_capi_status_t weftCompileInferenceStep(weft_module_t module,
                                            const weft_training_options_t *options,
                                            weft_buffer_t *package) {
  return compileStep(module, options, package, /*inference=*/true);
}

void weftBufferFree(weft_buffer_t buffer) { std::free(buffer.data); }

} // extern "C"
