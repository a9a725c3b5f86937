/* Internal interface of the ONNX importer (src/import/onnx.c).
 *
 * The public entry points are rlx_model_load_onnx and
 * rlx_model_load_onnx_memory (include/rlx/rlx.h). The functions here are
 * the pieces that other parts of rlx reuse: the ONNX conformance runner
 * reads test_data_set_N/input_K.pb with rlx_onnx_load_tensor_file, and
 * tests drive the subgraph import directly.
 *
 * Semantics follow onnx.proto of the pinned onnx package (IR version 13):
 * TensorProto storage rules (raw_data little-endian; typed fields;
 * external data with keys location/offset/length), and lexical scoping of
 * subgraphs (If/Loop/Scan bodies see the names of enclosing graphs). */
#ifndef RLX_IMPORT_ONNX_H
#define RLX_IMPORT_ONNX_H

#include "ir/graph.h"
#include "onnx/onnx.pb-c.h"

/* Deepest nesting of protobuf messages accepted in a file (a subgraph
 * costs three levels: GraphProto > NodeProto > AttributeProto). Deeper
 * input is refused before parsing, so that a crafted file cannot exhaust
 * the stack of the recursive protobuf-c parser. */
#define RLX_ONNX_MAX_NESTING 100


/* Converts a TensorProto to a new dense tensor (caller destroys it).
 * Data comes from, in this order: external data (data_location EXTERNAL;
 * keys location, offset, length; read from base_dir and only from inside
 * it), raw_data (little-endian, exactly numel * size bytes), or the typed
 * field of the dtype (float_data; int32_data for i32/i16/i8/u16/u8/bool and
 * the bit patterns of f16/bf16; int64_data; double_data; uint64_data for
 * u32/u64), which must hold exactly numel values. Bools become 0/1.
 * base_dir: folder of the model file; NULL refuses external data.
 * errors (messages name the tensor): RLX_ERR_INVALID_MODEL (no data type,
 *         negative dims, dims whose product or byte size overflows, data
 *         shorter or longer than the shape, external location outside
 *         base_dir, bad offset/length, external file too short),
 *         RLX_ERR_UNSUPPORTED (dtype, rank above RLX_MAX_RANK, segments),
 *         RLX_ERR_INVALID_ARGUMENT (external data with base_dir NULL),
 *         RLX_ERR_IO (external file missing or unreadable),
 *         RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir, rlx_tensor **out);

/* Reads a file holding one serialized TensorProto (as the ONNX test data
 * sets do: test_data_set_0/input_0.pb) and converts it as above, with
 * external data looked up in the file's folder.
 * errors: as rlx_onnx_tensor_from_proto; RLX_ERR_IO (missing file),
 *         RLX_ERR_INVALID_MODEL (protobuf parse failed). Every message
 *         starts with the path. */
rlx_status rlx_onnx_load_tensor_file(const char *path, rlx_tensor **out);

/* Imports one GraphProto into a new rlx_graph that imports the default
 * domain at `opset` (caller destroys it; it is not verified or inferred).
 * parent: the enclosing graph when gp is a subgraph body, else NULL. Names
 * that gp uses but does not define are looked up in the enclosing graphs
 * and created in the new graph with RLX_VALUE_OUTER (dtype and shape copied
 * from the outer value where known); without a parent they are errors.
 * Constant nodes become constant values; other nodes are added through
 * rlx_graph_add_node, so unknown ops fail there naming op, node and opset.
 * base_dir: as for rlx_onnx_tensor_from_proto.
 * errors: RLX_ERR_INVALID_MODEL (malformed graph: missing names, values
 *         defined twice, undefined names, ...), RLX_ERR_UNSUPPORTED (ops,
 *         domains, types, attribute kinds rlx does not implement),
 *         tensor errors as above; messages name the node or value. */
rlx_status rlx_onnx_graph_from_proto(const Onnx__GraphProto *gp, int64_t opset, const char *base_dir,
                                     rlx_graph *parent, rlx_graph **out);

#endif
