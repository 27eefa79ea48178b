//! prost messages for the part of TensorFlow's `GraphDef` a frozen graph is read for, written
//! by hand from the public `tensorflow/core/framework/{graph,node_def,attr_value,tensor,
//! tensor_shape,types}.proto` (field numbers as upstream). Functions (`library`), devices and
//! the value fields of tensors other than the integer and float ones are not declared, so the
//! decoder skips them.

use std::collections::HashMap;

/// `tensorflow.GraphDef`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphDef {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeDef>,
    #[prost(message, optional, tag = "4")]
    pub versions: Option<VersionDef>,
}

/// `tensorflow.VersionDef`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct VersionDef {
    #[prost(int32, tag = "1")]
    pub producer: i32,
}

/// `tensorflow.NodeDef`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeDef {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub op: String,
    #[prost(string, repeated, tag = "3")]
    pub input: Vec<String>,
    #[prost(map = "string, message", tag = "5")]
    pub attr: HashMap<String, AttrValue>,
}

/// `tensorflow.AttrValue` (its oneof flattened; `func` and `placeholder` skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttrValue {
    #[prost(message, optional, tag = "1")]
    pub list: Option<ListValue>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub s: Option<Vec<u8>>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    #[prost(float, optional, tag = "4")]
    pub f: Option<f32>,
    #[prost(bool, optional, tag = "5")]
    pub b: Option<bool>,
    /// `tensorflow.DataType`.
    #[prost(int32, optional, tag = "6")]
    pub r#type: Option<i32>,
    #[prost(message, optional, tag = "7")]
    pub shape: Option<TensorShapeProto>,
    #[prost(message, optional, tag = "8")]
    pub tensor: Option<TensorProto>,
}

/// `tensorflow.AttrValue.ListValue` (without `func`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValue {
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub s: Vec<Vec<u8>>,
    #[prost(int64, repeated, packed = "true", tag = "3")]
    pub i: Vec<i64>,
    #[prost(float, repeated, packed = "true", tag = "4")]
    pub f: Vec<f32>,
    #[prost(bool, repeated, packed = "true", tag = "5")]
    pub b: Vec<bool>,
    #[prost(int32, repeated, packed = "true", tag = "6")]
    pub r#type: Vec<i32>,
    #[prost(message, repeated, tag = "7")]
    pub shape: Vec<TensorShapeProto>,
}

/// `tensorflow.TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
    #[prost(bool, tag = "3")]
    pub unknown_rank: bool,
}

/// `tensorflow.TensorShapeProto.Dim`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
    #[prost(string, tag = "2")]
    pub name: String,
}

/// `tensorflow.TensorProto`: dtype, shape and the integer values shape inference reads.
/// `tensor_content` is kept only as bytes for small integer tensors by the importer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// `tensorflow.DataType`.
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    #[prost(bytes = "vec", tag = "4")]
    pub tensor_content: Vec<u8>,
    #[prost(int32, repeated, packed = "true", tag = "7")]
    pub int_val: Vec<i32>,
    #[prost(int64, repeated, packed = "true", tag = "10")]
    pub int64_val: Vec<i64>,
}

/// `tensorflow.DataType` codes the importer distinguishes.
pub mod data_type {
    pub const DT_FLOAT: i32 = 1;
    pub const DT_DOUBLE: i32 = 2;
    pub const DT_INT32: i32 = 3;
    pub const DT_UINT8: i32 = 4;
    pub const DT_INT16: i32 = 5;
    pub const DT_INT8: i32 = 6;
    pub const DT_INT64: i32 = 9;
    pub const DT_BOOL: i32 = 10;
    pub const DT_BFLOAT16: i32 = 14;
    pub const DT_HALF: i32 = 19;
}
