//! prost messages for the part of BVLC Caffe's `caffe.proto` a `.caffemodel` is read for: each
//! layer's name, type and the shapes of its blobs. Written by hand from the public schema
//! (field numbers as upstream); every other field, the blobs' float data above all, is skipped
//! by the decoder without being kept.

/// `caffe.NetParameter`: the modern `layer` list (100) and the legacy `layers` list (2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NetParameter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "100")]
    pub layer: Vec<LayerParameter>,
    #[prost(message, repeated, tag = "2")]
    pub layers: Vec<V1LayerParameter>,
}

/// `caffe.LayerParameter` (name, type, blobs).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LayerParameter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub r#type: String,
    #[prost(message, repeated, tag = "7")]
    pub blobs: Vec<BlobProto>,
}

/// `caffe.V1LayerParameter` (name, type enum, blobs).
#[derive(Clone, PartialEq, prost::Message)]
pub struct V1LayerParameter {
    #[prost(string, tag = "4")]
    pub name: String,
    /// `V1LayerParameter.LayerType`.
    #[prost(int32, tag = "5")]
    pub r#type: i32,
    #[prost(message, repeated, tag = "6")]
    pub blobs: Vec<BlobProto>,
}

/// `caffe.BlobProto`: the shape, or the legacy 4-D num/channels/height/width. `data` (5) and
/// the other value fields are not declared, so they are skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobProto {
    #[prost(message, optional, tag = "7")]
    pub shape: Option<BlobShape>,
    #[prost(int64, tag = "1")]
    pub num: i64,
    #[prost(int64, tag = "2")]
    pub channels: i64,
    #[prost(int64, tag = "3")]
    pub height: i64,
    #[prost(int64, tag = "4")]
    pub width: i64,
}

/// `caffe.BlobShape`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobShape {
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub dim: Vec<i64>,
}
