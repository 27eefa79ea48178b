//! prost messages for the part of MindSpore's MindIR (`mind_ir.proto`, package `mind_ir`) a
//! model is read for, written by hand from the public schema in the MindSpore repository
//! (`mindspore/core/proto/mind_ir.proto`; field numbers as upstream). Preprocessing, parallel
//! layouts, map tensors, quantization and the closures of higher-order graphs are not declared,
//! so the decoder skips them. A tensor's `raw_data` is a [`Bytes`] slice of the file, never a
//! copy: weights are read only for their dims.

use prost::bytes::Bytes;

/// `mind_ir.AttributeProto.AttributeType`: the types this importer reads.
pub mod attr_type {
    pub const FLOAT: i32 = 1;
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const UINT16: i32 = 4;
    pub const INT16: i32 = 5;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const STRING: i32 = 8;
    pub const BOOL: i32 = 9;
    pub const FLOAT16: i32 = 10;
    pub const DOUBLE: i32 = 11;
    pub const UINT32: i32 = 12;
    pub const UINT64: i32 = 13;
    pub const BFLOAT16: i32 = 16;
    pub const TENSOR: i32 = 17;
    pub const TENSORS: i32 = 19;
    pub const TUPLE: i32 = 20;
    pub const LIST: i32 = 21;
    pub const UMONAD: i32 = 23;
    pub const IOMONAD: i32 = 24;
}

/// `mind_ir.ModelProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(string, optional, tag = "1")]
    pub ir_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub producer_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub producer_version: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Every graph but the main one (sub-graphs a node calls).
    #[prost(message, repeated, tag = "8")]
    pub functions: Vec<GraphProto>,
    /// The primitives nodes name as `REF::<name>` (MindIR 2.x).
    #[prost(message, repeated, tag = "12")]
    pub primitives: Vec<PrimitiveProto>,
    #[prost(int64, optional, tag = "13")]
    pub mind_ir_version: Option<i64>,
}

/// `mind_ir.GraphProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// The weights (dims and dtype; their data is not read).
    #[prost(message, repeated, tag = "3")]
    pub parameter: Vec<TensorProto>,
    #[prost(message, repeated, tag = "5")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "6")]
    pub output: Vec<ValueInfoProto>,
}

/// `mind_ir.ValueInfoProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub tensor: Vec<TensorProto>,
}

/// `mind_ir.NodeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    /// `Constant`, `REF::<primitive>`, a graph's name, or (MindIR 1.x) the primitive itself.
    #[prost(string, optional, tag = "4")]
    pub op_type: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// The cell scope (`Default/conv1-Conv2d/Conv2D-op0`).
    #[prost(string, optional, tag = "7")]
    pub domain: Option<String>,
}

/// `mind_ir.PrimitiveProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrimitiveProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub op_type: Option<String>,
    #[prost(message, repeated, tag = "3")]
    pub attribute: Vec<AttributeProto>,
    #[prost(string, optional, tag = "4")]
    pub instance_name: Option<String>,
    /// 1: a primitive with attributes; 2: a primitive function, whose arguments are inputs.
    #[prost(int32, optional, tag = "5")]
    pub prim_type: Option<i32>,
}

/// `mind_ir.AttributeProto` (graphs, functors and sequence info skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    #[prost(double, optional, tag = "4")]
    pub d: Option<f64>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub s: Option<Vec<u8>>,
    #[prost(message, optional, tag = "6")]
    pub t: Option<TensorProto>,
    #[prost(float, repeated, packed = "false", tag = "8")]
    pub floats: Vec<f32>,
    #[prost(double, repeated, packed = "false", tag = "9")]
    pub doubles: Vec<f64>,
    #[prost(int64, repeated, packed = "false", tag = "10")]
    pub ints: Vec<i64>,
    #[prost(bytes = "vec", repeated, tag = "11")]
    pub strings: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "12")]
    pub tensors: Vec<TensorProto>,
    /// [`attr_type`].
    #[prost(int32, optional, tag = "16")]
    pub r#type: Option<i32>,
    /// A tuple's or list's items.
    #[prost(message, repeated, tag = "17")]
    pub values: Vec<AttributeProto>,
}

/// `mind_ir.TensorProto` (external data, compression and quantization skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// `mind_ir.TensorProto.DataType`: ONNX's numbering up to 16, then 17 = FLOAT64.
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    #[prost(int32, repeated, packed = "false", tag = "4")]
    pub int32_data: Vec<i32>,
    #[prost(int64, repeated, packed = "false", tag = "6")]
    pub int64_data: Vec<i64>,
    #[prost(string, optional, tag = "7")]
    pub name: Option<String>,
    #[prost(bytes = "bytes", optional, tag = "9")]
    pub raw_data: Option<Bytes>,
}
